"""``sitelore serve`` and ``sitelore mcp``: safe binding, one-line refusals, a real run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.cli_support import run_cli
from tests.edges.api_helpers import GatedSite
from tests.edges.test_api_jobs import CRAWLS

#: Commands point the root logger at the captured stderr; put it back after each test.
pytestmark = pytest.mark.usefixtures("restore_logging")


class TestRefusals:
    @pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
    def test_no_key_and_a_non_loopback_bind_refuses_to_start(
        self, host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without an API key, any address but loopback is refused (exit 78, one line)."""
        code, _, err = run_cli(["serve", "--host", host, "--db", str(tmp_path / "s.db")], capsys)
        assert code == 78
        assert err.count("\n") == 1
        assert f"--host {host}" in err
        assert "SITELORE_API_KEY" in err
        assert not (tmp_path / "s.db").exists()

    def test_mcp_over_http_has_the_same_rule(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """sitelore mcp --transport http refuses a non-loopback bind without a key too."""
        code, _, err = run_cli(
            ["mcp", "--transport", "http", "--host", "0.0.0.0", "--db", str(tmp_path / "m.db")],
            capsys,
        )
        assert code == 78
        assert "--host 0.0.0.0" in err

    def test_short_key_from_the_environment_is_refused(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """SITELORE_API_KEY is read, and a guessable (short) key is a configuration error."""
        monkeypatch.setenv("SITELORE_API_KEY", "hunter2")
        code, _, err = run_cli(["serve"], capsys)
        assert code == 78
        assert "too short" in err
        assert "hunter2" not in err

    def test_busy_port_is_one_line_exit_78(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A port already in use is reported as a configuration error, not a traceback."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            code, _, err = run_cli(
                ["serve", "--port", str(port), "--db", str(tmp_path / "s.db")], capsys
            )
        assert code == 78
        assert f"127.0.0.1:{port}: cannot listen" in err
        assert "Traceback" not in err

    @pytest.mark.parametrize(
        ("args", "named"),
        [
            (["serve", "--cap-max-pages", "0"], "--cap-max-pages"),
            (["mcp", "--transport", "carrier-pigeon"], "--transport carrier-pigeon"),
        ],
    )
    def test_bad_flags_are_usage_errors(
        self, args: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Bad serve/mcp flag values exit 2 naming the flag."""
        code, _, err = run_cli([*args, "--db", str(tmp_path / "s.db")], capsys)
        assert code == 2
        assert named in err


@contextlib.asynccontextmanager
async def sitelore_serve(
    tmp_path: Path,
    *args: str,
    command: tuple[str, ...] = ("serve",),
    banner: str = "sitelore API on http://127.0.0.1:",
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """Run ``sitelore serve --port 0`` (or another ``command``) as a subprocess; yield
    the URL its first line (``banner``...) names once it listens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITELORE_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sitelore", *command, "--port", "0",
        "--db", str(tmp_path / "serve.db"), *args,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = ""
        for _ in range(20):  # log lines may come first (the MCP SDK's, say)
            line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
            if line.startswith(banner) or not line:
                break
        assert line.startswith(banner), line
        yield line.split()[3], process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 30)


class TestRealRun:
    async def test_serve_listens_on_loopback_and_stops_cleanly(self, tmp_path: Path) -> None:
        """The command serves /healthz on 127.0.0.1 and exits 0 on SIGTERM."""
        async with sitelore_serve(tmp_path) as (url, process), httpx.AsyncClient() as client:
            health = await client.get(f"{url}/healthz")
            docs = await client.get(f"{url}/api/v1/documents")
        assert health.json()["status"] == "ok"
        assert docs.json()["total"] == 0
        assert process.returncode == 0

    async def test_serve_with_a_key_from_the_environment_requires_it(self, tmp_path: Path) -> None:
        """--api-key set: requests without the bearer token are 401, with it 200."""
        key = "s3cret-key-for-tests-only"
        async with (
            sitelore_serve(tmp_path, "--api-key", key) as (url, _process),
            httpx.AsyncClient() as client,
        ):
            bare = await client.get(f"{url}/api/v1/documents")
            keyed = await client.get(
                f"{url}/api/v1/documents", headers={"authorization": f"Bearer {key}"}
            )
        assert bare.status_code == 401
        assert keyed.status_code == 200


async def sse_events(
    client: httpx.AsyncClient, url: str, into: list[tuple[str, Any]], first: asyncio.Event
) -> None:
    """Read a server-sent event stream to its end, appending (event, data) pairs; set
    ``first`` at the first one."""
    name = ""
    async with client.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                into.append((name, json.loads(line.removeprefix("data: "))))
                first.set()


class TestHostChecks:
    async def test_serve_answers_listed_hosts_from_settings_and_flags(self, tmp_path: Path) -> None:
        """allowed_hosts (settings) and --allowed-host add up; other names get 421."""
        config = tmp_path / "sitelore.toml"
        config.write_text('allowed_hosts = ["docs.internal"]\n', encoding="utf-8")
        args = ("--config", str(config), "--allowed-host", "wiki.internal")
        async with sitelore_serve(tmp_path, *args) as (url, _process), httpx.AsyncClient() as c:
            answers = {
                name: (await c.get(f"{url}/healthz", headers={"host": name})).status_code
                for name in ("docs.internal", "wiki.internal", "evil.example", "127.0.0.1")
            }
        assert answers == {
            "docs.internal": 200,
            "wiki.internal": 200,
            "evil.example": 421,
            "127.0.0.1": 200,
        }

    async def test_mcp_over_http_on_127_0_0_2_refuses_a_rebinding_page(
        self, tmp_path: Path
    ) -> None:
        """mcp --transport http --host 127.0.0.2 (no key: loopback) refuses foreign Host/Origin."""
        command = ("mcp", "--transport", "http", "--host", "127.0.0.2")
        banner = "sitelore MCP on http://127.0.0.2:"
        async with (
            sitelore_serve(tmp_path, command=command, banner=banner) as (endpoint, _process),
            httpx.AsyncClient() as client,
        ):
            port = endpoint.rsplit(":", 1)[1].split("/")[0]
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            evil_host = await client.post(endpoint, json=ping, headers={"host": f"evil:{port}"})
            evil_origin = await client.post(
                endpoint, json=ping, headers={"origin": f"http://evil.example:{port}"}
            )
        assert evil_host.status_code == 421
        assert evil_origin.status_code == 403


class TestShutdownAndRestart:
    async def test_sigterm_interrupts_jobs_and_a_restart_remembers_them(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """SIGTERM ends a running job (SSE end event, no traceback, quick exit); after a
        restart on the same store GET tells both jobs' fates and DELETE forgets one."""
        site, base = gated
        private = ("--allow-private", "127.0.0.1")
        events: list[tuple[str, Any]] = []
        async with (
            sitelore_serve(tmp_path, *private) as (url, process),
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            done = (await client.post(CRAWLS, json={"url": f"{base}/", "maxPages": 1})).json()
            body = {"url": f"{base}/", "maxPages": 10, "concurrency": 1}
            running = (await client.post(CRAWLS, json=body)).json()
            await asyncio.wait_for(site.asked.wait(), 10)
            streaming = asyncio.Event()
            reader = asyncio.create_task(
                sse_events(client, running["links"]["events"], events, streaming)
            )
            await asyncio.wait_for(streaming.wait(), 10)
            assert (await client.get(done["links"]["self"])).json()["status"] == "done"
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(reader, 10)
            await asyncio.wait_for(process.wait(), 10)
            assert process.stderr is not None
            log = (await process.stderr.read()).decode()
        assert process.returncode == 0
        assert "Traceback" not in log
        assert "CancelledError" not in log
        end = events[-1]
        assert end[0] == "end"
        assert end[1]["status"] == "interrupted"
        assert "shutting down" in end[1]["error"]["message"]

        async with (
            sitelore_serve(tmp_path, *private) as (url, _process),
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            cut = (await client.get(running["links"]["self"])).json()
            kept = (await client.get(done["links"]["self"])).json()
            deleted = await client.delete(done["links"]["self"])
            gone = await client.get(done["links"]["self"])
        assert cut["status"] == "interrupted"
        assert cut["error"]["code"] == "interrupted"
        assert cut["progress"]["pagesIndexed"] == 1
        assert cut["result"]["documents"][0]["url"] == f"{base}/"
        assert kept["status"] == "done"
        assert kept["result"]["pagesIndexed"] == 1
        assert deleted.status_code == 204
        assert gone.status_code == 404

    async def test_a_job_cut_by_a_crash_reads_interrupted_after_restart(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """A server killed outright leaves its job recorded as running: it reads interrupted."""
        site, base = gated
        private = ("--allow-private", "127.0.0.1")
        async with (
            sitelore_serve(tmp_path, *private) as (url, process),
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            body = {"url": f"{base}/", "maxPages": 10, "concurrency": 1}
            job = (await client.post(CRAWLS, json=body)).json()
            await asyncio.wait_for(site.asked.wait(), 10)
            process.kill()
            await asyncio.wait_for(process.wait(), 10)
        async with (
            sitelore_serve(tmp_path, *private) as (url, _process),
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            cut = (await client.get(job["links"]["self"])).json()
        assert cut["status"] == "interrupted"
        assert "not shut down cleanly" in cut["error"]["message"]
