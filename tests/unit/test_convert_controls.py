"""No converter leaves control characters in a Document (``convert._controls``)."""

from __future__ import annotations

import pytest

from sitelore.core.convert import to_document
from sitelore.core.convert._controls import clean_controls

URL = "https://docs.example.org/page"

CLEAN = [
    # (id, text, cleaned)
    ("plain", "plain text\twith a tab\n", "plain text\twith a tab\n"),
    ("nul", "a\x00b", "ab"),
    ("csi", "\x1b[2J\x1b[31mred", "[2J[31mred"),
    ("osc-title", "t\x1b]0;pwn\x07itle", "t]0;pwnitle"),
    ("crlf", "one\r\ntwo\rthree", "one\ntwo\nthree"),
    ("del-and-c1", "a\x7fb\x85c\x9bd", "abcd"),
    ("lone-surrogate", "x\ud800y", "x\ufffdy"),
    ("kept", "é ü \u2028 \ufffe \U0010ffff", "é ü \u2028 \ufffe \U0010ffff"),
]


@pytest.mark.parametrize(("text", "cleaned"), [pytest.param(t, c, id=i) for i, t, c in CLEAN])
def test_clean_controls(text: str, cleaned: str) -> None:
    """C0 (but TAB/LF), DEL and C1 go; CR becomes LF; a lone surrogate becomes U+FFFD."""
    assert clean_controls(text) == cleaned


BODIES = [
    # (id, content type, body): each carries NUL, ESC, BEL and CR in title and text
    (
        "html",
        "text/html; charset=utf-8",
        b"<html><head><title>T\x1b]0;pwn\x07</title><meta name=description content='d\x1b[1m'>"
        b"</head><body><main><h1>Head\x01\x1b[31m</h1><p>Text \x00 and \x1b[2J more text</p>"
        b"<pre>code\x08\r\n</pre></main></body></html>",
    ),
    ("xhtml", "application/xhtml+xml", b"<html><body><h1>X\x1b[5m</h1><p>a\x07b</p></body></html>"),
    ("plain", "text/plain", b"Title \x1b[31m\x00line\r\nbody \x00 text\x07\n"),
    ("markdown", "text/markdown", b"# Head\x1b]8;;http://x\x07\n\nbody\x00\r\n"),
]


@pytest.mark.parametrize(("content_type", "body"), [pytest.param(c, b, id=i) for i, c, b in BODIES])
def test_documents_hold_no_control_characters(content_type: str, body: bytes) -> None:
    """Title, Markdown and description of every content type: only TAB and LF remain.

    Plain text and Markdown were stored as sent: a NUL (PostgreSQL refuses it in text)
    and ESC sequences that `sitelore show` wrote to the terminal.
    """
    document = to_document(body, content_type, URL)
    fields = [document.title, document.markdown, document.description or ""]
    for text in fields:
        assert not [ch for ch in text if ch < " " and ch not in "\t\n"], text
        assert "\x7f" not in text
    assert document.markdown.strip()
