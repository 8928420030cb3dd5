"""Turn a text/plain or text/markdown body into a document: stored as it is, titled.

The title is the first Markdown heading, else the first non-blank line, else the
last URL path segment.
"""

from __future__ import annotations

import re

from sitelore.core.convert._title import MAX_TITLE, last_path_segment
from sitelore.core.models import Document

__all__ = ["text_to_document"]

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _text_title(text: str, url: str) -> str:
    heading = _ATX_HEADING.search(text)
    if heading is not None:
        return heading.group(1).strip()[:MAX_TITLE]
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())[:MAX_TITLE]
    return last_path_segment(url)


def text_to_document(text: str, content_type: str, url: str) -> Document:
    """A document holding ``text`` unchanged, with a title found in it."""
    return Document(url=url, title=_text_title(text, url), markdown=text, content_type=content_type)
