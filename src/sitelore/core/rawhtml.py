"""Recognise the raw HTML the converter itself writes into Markdown.

Two things a GFM table cannot say are written as HTML: a line break inside a cell
(``<br>``, as html-to-markdown writes it) and a table whose cells hold blocks (code,
paragraphs), written one tag per line around the cells' Markdown
(``convert._codetables``). Whoever reads the Markdown back treats exactly these as
markup, and any other tag as the page's text: the indexer leaves them out of the
words (``sections.plain_text``), the web UI renders them (and escapes the rest).
"""

from __future__ import annotations

import re

__all__ = ["LINE_BREAK", "TABLE_TAGS", "is_table_tag_line", "table_tag"]

#: A line break inside a table cell.
LINE_BREAK = re.compile(r"<br ?/?>", re.IGNORECASE)
#: The elements of a table written as HTML (with ``colspan``/``rowspan`` on cells).
TABLE_TAGS = ("table", "tr", "th", "td")
_TABLE_TAG = re.compile(r"^[ \t]*</?(?:table|tr|th|td)(?: (?:col|row)span=\"\d+\")*>[ \t]*$")


def table_tag(tag: str, *, spans: dict[str, str] | None = None, closing: bool = False) -> str:
    """One tag of a table written as HTML, as it stands alone on its line.

    >>> table_tag("td", spans={"colspan": "2"}), table_tag("tr", closing=True)
    ('<td colspan="2">', '</tr>')
    """
    if closing:
        return f"</{tag}>"
    attributes = "".join(f' {name}="{value}"' for name, value in (spans or {}).items())
    return f"<{tag}{attributes}>"


def is_table_tag_line(line: str) -> bool:
    """Whether ``line`` is one tag of a table written as HTML (and nothing else).

    >>> is_table_tag_line('<td rowspan="3">'), is_table_tag_line("<tr><td>x</td></tr>")
    (True, False)
    """
    return "<" in line and _TABLE_TAG.match(line) is not None
