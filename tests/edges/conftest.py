"""Fixtures of the edge tests: a site whose pages hang until the test opens a gate."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer
from tests.edges.api_helpers import GatedSite


@pytest.fixture
async def gated() -> AsyncIterator[tuple[GatedSite, str]]:
    gated = GatedSite()
    server = TestServer(gated.app(), host="127.0.0.1")
    await server.start_server()
    try:
        yield gated, str(server.make_url("")).rstrip("/")
    finally:
        gated.gate.set()
        await server.close()
