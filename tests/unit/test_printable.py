"""Text a site controls is shown with its control characters escaped (``core.printable``)."""

from __future__ import annotations

import pytest

from sitelore.core.errors import (
    BlockedURLError,
    ConversionFailedError,
    NetworkError,
    SiteloreError,
)
from sitelore.core.printable import printable

CASES = [
    ("plain", "http://docs.example/a b é", "http://docs.example/a b é"),
    ("csi", "/rel\x1b[2J", "/rel\\x1b[2J"),
    ("osc", "t\x1b]0;pwn\x07", "t\\x1b]0;pwn\\x07"),
    ("line-breaks", "one\r\ntwo", "one\\x0d\\x0atwo"),
    ("nul-del-c1", "\x00\x7f\x9b", "\\x00\\x7f\\x9b"),
]


@pytest.mark.parametrize(("text", "shown"), [pytest.param(t, s, id=i) for i, t, s in CASES])
def test_printable(text: str, shown: str) -> None:
    """Each control character becomes a visible \\xNN; everything else is kept."""
    assert printable(text) == shown


@pytest.mark.parametrize(
    "error",
    [
        NetworkError("http://x/\x1b[2J", "closed: \x1b]0;pwn\x07"),
        BlockedURLError("http://x/\x1b[2J", "refused \x1b[31m"),
        ConversionFailedError("http://x/", "lxml said \x1b[2J"),
    ],
    ids=["fetch", "url-reason", "conversion"],
)
def test_per_url_errors_show_no_control_characters(error: SiteloreError) -> None:
    """What a page outcome, a log line and the CLI show of a per-URL error is one safe line."""
    assert not [ch for ch in str(error) if ch < " " or "\x7f" <= ch <= "\x9f"]
    assert "\\x1b" in str(error)
