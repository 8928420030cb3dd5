"""The characters conversion passes write into a page's tree as marks, kept out of pages.

Several passes leave marks in the tree that a later step turns into Markdown: link
text characters to escape, footnote brackets, heading ids, tables written as HTML, a
break between two quotes. A mark must never be a character a page can hold, or the
page's own text would be read as a mark: a Material Icons glyph (U+E002) came out as
``\\<``, and text holding a heading-id mark ended the page with an ``IndexError``.
So every mark is a Unicode *noncharacter* (U+FDD0..U+FDEF, reserved by the standard
for a program's internal use and never meant to be interchanged), and a page whose
text holds one (raw, or as a character reference such as ``&#xFDD0;``, which the
parser decodes) has them taken out of its text before any pass runs
(``_markdown.content_to_markdown``).

>>> without_marks("a\\ufdd0b\\ue002c")
'ab\\ue002c'
"""

from __future__ import annotations

import re

__all__ = [
    "BLANK_CELL",
    "HEADING_ID_CLOSE",
    "HEADING_ID_OPEN",
    "LINK_TEXT",
    "MARKS",
    "MARKUP_CLOSE",
    "MARKUP_OPEN",
    "QUOTE_BREAK",
    "TABLE",
    "holds_marks",
    "without_marks",
]

#: Characters of text that Markdown would read as markup -> the mark standing for
#: the escaped character (``\\[``) until the Markdown is made.
LINK_TEXT = {"[": "\ufdd0", "]": "\ufdd1", "<": "\ufdd2", ">": "\ufdd3",
             "*": "\ufdd4", "_": "\ufdd5", "`": "\ufdd6", "!": "\ufdd7"}  # fmt: skip
#: A paragraph holding only this keeps two adjacent block quotes apart.
QUOTE_BREAK = "\ufdd8"
#: Wraps the number of a table written as HTML (``_codetables``).
TABLE = "\ufdd9"
#: Wrap the number of a heading's id (``_anchors``).
HEADING_ID_OPEN = "\ufdda"
HEADING_ID_CLOSE = "\ufddb"
#: Brackets of Markdown syntax a pass writes as text (footnotes ``[^1]``): they stay
#: brackets, where the page's own brackets may be escaped.
MARKUP_OPEN = "\ufddc"
MARKUP_CLOSE = "\ufddd"
#: The content of a header cell added to a table that has none (it becomes empty).
BLANK_CELL = "\ufdde"

#: Every mark, for the test that a page holds none (``str.__contains__`` is a fast scan).
MARKS: tuple[str, ...] = (
    *LINK_TEXT.values(),
    QUOTE_BREAK,
    TABLE,
    HEADING_ID_OPEN,
    HEADING_ID_CLOSE,
    MARKUP_OPEN,
    MARKUP_CLOSE,
    BLANK_CELL,
)
_NONCHARACTERS = re.compile("[\ufdd0-\ufdef]+")


def holds_marks(text: str) -> bool:
    """Whether ``text`` holds a character used as a mark (nearly never: a fast scan)."""
    return any(mark in text for mark in MARKS)


def without_marks(text: str) -> str:
    """``text`` without the noncharacters marks are made of (the rest untouched)."""
    return _NONCHARACTERS.sub("", text)
