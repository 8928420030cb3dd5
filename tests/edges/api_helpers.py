"""Serve the REST API for a test: uvicorn on 127.0.0.1 (a free port) and an httpx client."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from tests.fakes import FakeClock, FakeResolver

from sitelore.api import create_app
from sitelore.bootstrap import Runtime
from sitelore.cli_serve import running_server
from sitelore.config import Settings
from sitelore.models import Limits


@dataclasses.dataclass(frozen=True)
class Served:
    """A running API: its client (base URL set), runtime and base URL."""

    client: httpx.AsyncClient
    runtime: Runtime
    url: str


@contextlib.asynccontextmanager
async def serve_api(
    tmp_path: Path,
    *,
    limits: Limits | None = None,
    headers: dict[str, str] | None = None,
    resolver: FakeResolver | None = None,
    **app_options: Any,
) -> AsyncIterator[Served]:
    """The API over a fresh SQLite store; 127.0.0.1 is allowed, the clock never sleeps."""
    settings = Settings(
        store=str(tmp_path / "api.db"),
        allow_private=("127.0.0.1",),
        limits=limits or Limits(),
    )
    async with Runtime(settings, clock=FakeClock(), resolver=resolver) as runtime:
        app = create_app(runtime, **app_options)
        async with (
            running_server(app, host="127.0.0.1", port=0) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30, headers=headers) as client,
        ):
            yield Served(client, runtime, served.url)
