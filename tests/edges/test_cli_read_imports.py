"""Read commands start fast: they never load the crawl stack (checked structurally).

Each command runs in a fresh interpreter; afterwards the modules that make a cold start
slow (aiohttp, the fetcher, the spider, the converter, WARC, the web and MCP servers)
must not have been imported. Without a settings file, ``search``, ``list`` and ``show``
also build no settings or options model and skip the composition root and the other
commands' modules. ``make bench`` reports the wall time this buys.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli_support import create_store

#: Modules a read command must not import.
CRAWL_STACK = (
    "aiohttp",
    "sitelore.adapters.fetcher",
    "sitelore.crawl.engine",
    "sitelore.core.convert",
    "sitelore.crawl.robots_loader",
    "sitelore.adapters.snapshots",
    "warcio",
    "selectolax",
    "fastapi",
    "uvicorn",
    "mcp",
)

#: Modules ``search``, ``list`` and ``show`` do not need when no settings file is found.
READ_PATH_EXTRAS = (
    "sitelore.core.config",
    "sitelore.core.options",
    "sitelore.app.bootstrap",
    "sitelore.adapters.convert_pool",
    "sitelore.core.guard",
    "sitelore.app.refresh",
    "sitelore.server.host_guard",
    "rich.table",
)

#: Runs the CLI in-process, then prints its exit code and which of the modules named in
#: argv[1] (a JSON list) were loaded.
PROBE = """
import json, sys
watched = json.loads(sys.argv[1])
import sitelore.cli.main
try:
    sitelore.cli.main.main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": [m for m in watched if m in sys.modules]}))
"""


def probe(args: list[str], cwd: Path, watched: tuple[str, ...] = CRAWL_STACK) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(watched), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(name="store")
def _store(tmp_path: Path) -> Path:
    path = create_store(tmp_path / "s.db")
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
        ["delete", "https://docs.example.com/nothing"],
    ],
    ids=lambda command: command[0],
)
def test_read_command_loads_no_crawl_stack(command: list[str], store: Path) -> None:
    result = probe([*command, "--db", str(store)], store.parent)
    assert result["loaded"] == []
    assert result["code"] in (0, 2)  # show of a missing document is a usage error


@pytest.mark.parametrize(
    "command",
    [["search", "retry"], ["show", "https://docs.example.com/nothing"]],
    ids=lambda command: command[0],
)
def test_without_a_settings_file_reads_build_no_settings_model(
    command: list[str], store: Path
) -> None:
    """No settings file: the store is read without pydantic settings or the runtime."""
    elsewhere = store.parent / "elsewhere"
    elsewhere.mkdir()
    result = probe([*command, "--db", str(store)], elsewhere, CRAWL_STACK + READ_PATH_EXTRAS)
    assert result["loaded"] == []
    assert result["code"] in (0, 2)
