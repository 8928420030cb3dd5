"""Fixtures of the edge tests: the demo site served for the CLI, a gated site, logging kept.

The CLI runs its own event loop, so the sites it crawls are served from a thread
(``tests.loopback.in_thread``); one server per module.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from tests.edges.api_helpers import GatedSite
from tests.loopback import in_thread

from sitelore.adapters.demo_site import bundled_site_path, serve_site


def site_copy(root: Path, robots: str | None = None) -> Path:
    """The bundled site copied to ``root``, without its Crawl-delay or with ``robots``."""
    shutil.copytree(bundled_site_path(), root)
    text = (root / "robots.txt").read_text(encoding="utf-8")
    (root / "robots.txt").write_text(
        robots if robots is not None else text.replace("Crawl-delay: 0.2\n", ""),
        encoding="utf-8",
    )
    return root


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The bundled site as shipped (``Crawl-delay: 0.2``), served from a thread."""
    with in_thread(lambda: serve_site(bundled_site_path())) as base:
        yield base


@pytest.fixture(scope="module")
def quick_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A copy of the bundled site without its Crawl-delay (quick crawls), from a thread."""
    root = site_copy(tmp_path_factory.mktemp("site") / "site")
    with in_thread(lambda: serve_site(root)) as base:
        yield base


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """A command's logging setup writes to this test's captured stderr: undo it after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


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
