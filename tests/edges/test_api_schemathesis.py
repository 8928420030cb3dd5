"""schemathesis over the live OpenAPI document: no 5xx, no answer the document does not allow.

The API runs under uvicorn on 127.0.0.1 in a thread of this process; every host name
resolves to an address the server refuses, so no generated URL is ever fetched.
``schemathesis run`` (a subprocess: its coverage phase sends the boundary values, such
as 2**63 or a lone surrogate, that found the 500s of issue 13) tests every operation
with all checks, a fixed seed and a bounded number of examples per operation.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import pytest
from tests.fakes import FakeClock
from tests.loopback import in_thread

from sitelore.app.bootstrap import Runtime
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings
from sitelore.server.api import create_app

pytestmark = pytest.mark.slow

SEED = 42
EXAMPLES = 30

#: The one known difference between "schema-valid" and "accepted", written down: a
#: well-formed URL string can still be refused (400: not http(s), a private address,
#: robots.txt), as the document says for the operations that take one.
CONFIG = """
[[operations]]
include-path-regex = "^/api/v1/(documents/url|crawls)$"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "429"]
"""


class Unroutable:
    """Resolves every name to a private address the server does not allow."""

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        return ["10.255.255.1"]


@contextlib.asynccontextmanager
async def api(tmp_path: Path) -> AsyncIterator[str]:
    """The API on a free 127.0.0.1 port; yields its URL."""
    settings = Settings(store=str(tmp_path / "api.db"))
    async with Runtime(settings, clock=FakeClock(), resolver=Unroutable()) as runtime:
        app = create_app(runtime, max_active_crawls=2)
        async with running_server(app, host="127.0.0.1", port=0) as served:
            yield served.url


def test_the_api_holds_to_its_openapi_document(tmp_path: Path) -> None:
    """schemathesis (all checks; examples, coverage and fuzzing phases) finds nothing."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    with in_thread(lambda: api(tmp_path), timeout=30) as url:
        paths = httpx.get(f"{url}/openapi.json").json()["paths"]
        operations = sum(len(methods) for methods in paths.values())
        run = subprocess.run(
            [
                sys.executable, "-m", "schemathesis.cli", "--config-file", str(config),
                "--no-color", "run", f"{url}/openapi.json", "--checks", "all",
                "--phases", "examples,coverage,fuzzing", "--mode", "all",
                "--seed", str(SEED), "--max-examples", str(EXAMPLES),
                "--generation-database", "none",
                "--continue-on-failure", "--workers", "1",
            ],
            capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        )  # fmt: skip
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert f"{operations} selected / {operations} total" in run.stdout  # every route ran
