"""get-document cursors are ASCII digits that ``text_window`` handed out, nothing else."""

from __future__ import annotations

import pytest

from sitelore.app.service import text_window
from sitelore.core.errors import UsageError

TEXT = "0123456789" * 3


@pytest.mark.parametrize("cursor", ["²", "\uff15", "٣", "-1", "1e1", " 3", "31", "9" * 400])
def test_cursors_other_than_ascii_offsets_are_refused(cursor: str) -> None:
    """Unicode digits, signs, spaces, offsets past the end: a usage error, never a crash."""
    with pytest.raises(UsageError, match="cursor"):
        text_window(TEXT, cursor=cursor, max_bytes=10)


@pytest.mark.parametrize(("cursor", "start"), [(None, 0), ("", 0), ("5", 5), ("30", 30)])
def test_ascii_offsets_are_read(cursor: str | None, start: int) -> None:
    """An ASCII offset within the text starts the window there."""
    assert text_window(TEXT, cursor=cursor, max_bytes=10).start == start
