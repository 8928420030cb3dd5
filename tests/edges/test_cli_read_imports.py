"""Read commands start fast: they never load the crawl stack (checked structurally).

Each command runs in a fresh interpreter; afterwards the modules that make a cold start
slow (aiohttp, the fetcher, the spider, the converter, WARC, the web and MCP servers)
must not have been imported. ``make bench`` reports the wall time this buys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sitelore.store import SQLiteStore

#: Modules a read command must not import.
CRAWL_STACK = (
    "aiohttp",
    "sitelore.fetcher",
    "sitelore.crawl.engine",
    "sitelore.convert",
    "sitelore.robots_loader",
    "sitelore.snapshots",
    "warcio",
    "selectolax",
    "fastapi",
    "uvicorn",
    "mcp",
)

#: Runs the CLI in-process, then prints its exit code and which of the modules named in
#: argv[1] (a JSON list) were loaded.
PROBE = """
import json, sys
watched = json.loads(sys.argv[1])
import sitelore.cli
try:
    sitelore.cli.main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": [m for m in watched if m in sys.modules]}))
"""


def probe(args: list[str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(CRAWL_STACK), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(name="store")
async def _store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    await store.count()
    await store.close()
    (tmp_path / "sitelore.toml").write_text('[sources.docs]\nurl = "https://docs.example.com/"\n')
    return path


def test_importing_the_cli_loads_no_crawl_stack(tmp_path: Path) -> None:
    assert probe(["version"], tmp_path) == {"code": 0, "loaded": []}


@pytest.mark.parametrize(
    "command",
    [
        ["search", "retry"],
        ["list"],
        ["show", "https://docs.example.com/nothing"],
        ["sources"],
        ["changes", "docs"],
    ],
    ids=lambda command: command[0],
)
def test_read_command_loads_no_crawl_stack(command: list[str], store: Path) -> None:
    result = probe([*command, "--db", str(store)], store.parent)
    assert result["loaded"] == []
    assert result["code"] in (0, 2)  # show of a missing document is a usage error
