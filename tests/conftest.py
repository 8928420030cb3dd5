"""Shared test configuration: a clean environment for every test."""

from __future__ import annotations

import pytest

_LEAKY_ENV = (
    "SITELORE_DB",
    "SITELORE_CONFIG",
    "SITELORE_API_KEY",
    "SITELORE_USER_AGENT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's proxy or sitelore settings."""
    for key in _LEAKY_ENV:
        monkeypatch.delenv(key, raising=False)
