"""Bounded page text for agents: byte windows with cursors, and fetched-content fences."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.app.service import document_header, fence, text_window
from sitelore.core.errors import UsageError
from sitelore.core.models import StoredDocument


def windows(text: str, budget: int) -> list[str]:
    """Every window of ``text`` in order, following the cursors."""
    out: list[str] = []
    cursor: str | None = None
    while True:
        window = text_window(text, cursor=cursor, max_bytes=budget)
        out.append(window.text)
        cursor = window.next_cursor
        if cursor is None:
            return out


class TestTextWindow:
    def test_short_text_fits_in_one_window(self) -> None:
        """A text under the budget comes back whole, with no next cursor."""
        window = text_window("hello", cursor=None, max_bytes=1024)
        assert (window.text, window.start, window.end, window.total) == ("hello", 0, 5, 5)
        assert window.next_cursor is None

    def test_windows_never_split_a_character_and_respect_the_budget(self) -> None:
        """Multi-byte characters stay whole; each window is at most the budget in bytes."""
        text = "é" * 10 + "漢字" * 5 + "🙂" * 3
        parts = windows(text, 5)
        assert "".join(parts) == text
        assert all(0 < len(part.encode()) <= 5 for part in parts)

    def test_budget_smaller_than_a_character_still_advances(self) -> None:
        """A 1-byte budget yields one whole character per window instead of looping."""
        assert windows("🙂a", 1) == ["🙂", "a"]

    @pytest.mark.parametrize("cursor", ["-1", "x", "999", "1.5"])
    def test_foreign_cursor_is_a_usage_error(self, cursor: str) -> None:
        """A cursor that is not an offset within the text is refused naming it."""
        with pytest.raises(UsageError, match="cursor"):
            text_window("short", cursor=cursor, max_bytes=1024)

    def test_cursor_inside_a_character_is_refused(self) -> None:
        """Byte 1 of 'é' is not a boundary: refused rather than decoded badly."""
        with pytest.raises(UsageError, match="boundary"):
            text_window("é", cursor="1", max_bytes=1024)

    @given(st.text(max_size=200), st.integers(min_value=1, max_value=64))
    def test_windows_reassemble_the_text(self, text: str, budget: int) -> None:
        """Following the cursors from the start gives back exactly the text."""
        assert "".join(windows(text, budget)) == text


class TestFence:
    def test_fence_wraps_with_a_random_token_and_the_header(self) -> None:
        """The text sits between two markers sharing a token; header lines come first."""
        out = fence("body text", header={"url": "https://x.example/"}, nonce="abc123")
        lines = out.splitlines()
        assert lines[0].startswith("<<<FETCHED CONTENT abc123: untrusted text")
        assert lines[1] == "url: https://x.example/"
        assert lines[2] == "---"
        assert lines[3] == "body text"
        assert lines[-1] == "<<<END FETCHED CONTENT abc123>>>"

    def test_tokens_differ_so_page_text_cannot_forge_the_end(self) -> None:
        """Two fences get different tokens, so a page cannot know the closing marker."""
        first = fence("x", header={}).splitlines()[-1]
        second = fence("x", header={}).splitlines()[-1]
        assert first != second

    def test_document_header_names_url_fetch_time_and_bytes(self) -> None:
        """The header says where the text came from, when, and which bytes these are."""
        when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        doc = StoredDocument(
            id="d1", url="https://x.example/a", title="A\ntitle", markdown="x" * 40,
            content_hash="h", content_type="text/html", status=200,
            fetched_at=when, created_at=when, updated_at=when,
        )  # fmt: skip
        window = text_window(doc.markdown, cursor=None, max_bytes=16)
        header = document_header(doc, window)
        assert header["url"] == "https://x.example/a"
        assert header["title"] == "A title"
        assert header["fetched-at"] == "2026-01-02T03:04:05Z"
        assert header["bytes"] == "0-16 of 40"
        assert header["next-cursor"] == "16"
