"""Browser-test fixtures: Debian's Chromium for pytest-playwright, the UI servers, screenshots.

The tests skip, loudly, where Playwright or a Chromium is missing (as the render tests
do); ``.ci/run`` installs Debian's ``chromium``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.ui_support import UIServer, ui_server

SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "ui"
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last.

    pytest-playwright's sync API keeps its own event loop running in the main thread
    from the first browser test to the end of the session; asyncio tests after that
    could not start theirs.
    """
    here = Path(__file__).parent
    items.sort(key=lambda item: here in item.path.parents)


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    """Launch the system Chromium (never a downloaded browser); skip without one."""
    pytest.importorskip("playwright", reason="Playwright is not installed (the dev extra)")
    from sitelore.adapters.render import find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium): browser tests skipped")
    return {"executable_path": chromium, "args": _ARGS, "headless": True}


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UIServer]:
    """sitelore serving its UI over a fresh store, the example site, and the trap site."""
    with ui_server(tmp_path_factory.mktemp("ui") / "ui.db") as info:
        yield info


@pytest.fixture(scope="session")
def shots() -> Path:
    """Where the screenshots go (gitignored)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS
