"""Keep control characters out of every Document, whatever converter made it.

A page's text reaches terminals (``show``, ``list``, search snippets), JSON, SQLite and
PostgreSQL. Raw control characters are useless to all of them and harmful to some: an
ESC starts a terminal escape sequence (clear the screen, retitle the window, OSC 52
clipboard writes), PostgreSQL refuses a NUL in ``text``, and a lone surrogate cannot be
encoded as UTF-8. HTML's parser already replaces a NUL and ``&#xD800;``; plain text,
Markdown, PDF text and the other C0/C1 controls come through as they were sent.

So, once per document: C0 controls other than TAB and LF, DEL and the C1 controls are
removed; CR LF and a lone CR become LF; a lone surrogate becomes U+FFFD. Text without
any (nearly every page) is returned as it is after one scan.
"""

from __future__ import annotations

import dataclasses
import re

from sitelore.core.models import Document

__all__ = ["clean_controls", "without_controls"]

#: What is removed or replaced: C0 but TAB/LF, DEL, C1, and the surrogate range.
_UNWANTED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NEWLINES = re.compile("\r\n?")
_REMOVED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_controls(text: str) -> str:
    """``text`` without control characters (LF and TAB kept, CR made LF)."""
    if _UNWANTED.search(text) is None:
        return text
    text = _NEWLINES.sub("\n", text)
    text = _REMOVED.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


def _optional(text: str | None) -> str | None:
    return None if text is None else clean_controls(text)


def without_controls(document: Document) -> Document:
    """``document`` with its text fields cleaned (links are normalised URLs already)."""
    return dataclasses.replace(
        document,
        title=clean_controls(document.title),
        markdown=clean_controls(document.markdown),
        description=_optional(document.description),
        lang=_optional(document.lang),
    )
