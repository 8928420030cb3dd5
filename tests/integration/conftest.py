"""Fixtures of the integration tests: one PostgreSQL database per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.scale_support import temp_database


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """A new PostgreSQL database for the module, dropped after it.

    Created only if one of the module's tests asks for it (SQLite-only runs need no
    server); each test empties the tables it uses.
    """
    with temp_database() as url:
        yield url
