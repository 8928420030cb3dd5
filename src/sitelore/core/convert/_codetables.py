"""Write tables whose cells hold code blocks as HTML tables holding Markdown.

A GFM table cell cannot hold a fenced code block (DocBook's function tables put
examples in their cells). Such a table is replaced by a numbered slot before
conversion; afterwards the slot becomes an HTML table whose cells hold the cell's
Markdown between blank lines, which CommonMark and GFM render as Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.convert._marks import TABLE
from sitelore.core.convert._tree import outermost
from sitelore.core.rawhtml import table_tag

__all__ = ["fill_slots", "slot_code_tables"]

_TABLE_SLOT = re.compile(r"^([ >]*)" + TABLE + r"(\d+)" + TABLE + r"[ \t]*$", re.M)


def _html_table(table: LexborNode, to_markdown: Callable[[str], str]) -> str:
    """``table`` as an HTML table whose cells hold Markdown (blank lines around it)."""
    lines = [table_tag("table")]
    for row in table.css("tr"):
        lines.append(table_tag("tr"))
        for cell in row.iter():
            if cell.tag not in ("td", "th"):
                continue
            spans = {
                name: value
                for name in ("colspan", "rowspan")
                if (value := cell.attributes.get(name)) and value.isascii() and value.isdigit()
            }
            opening = table_tag(cell.tag, spans=spans)
            lines += [opening, "", to_markdown(cell.inner_html or "").strip(), ""]
            lines.append(table_tag(cell.tag, closing=True))
        lines.append(table_tag("tr", closing=True))
    lines.append(table_tag("table", closing=True))
    return "\n".join(lines)


def _indent(block: str, prefix: str) -> str:
    """``block`` with every line under ``prefix`` (a list item's indent, a quote's ``>``)."""
    bare = prefix.rstrip()
    return "\n".join(prefix + line if line else bare for line in block.split("\n"))


def slot_code_tables(
    tree: LexborHTMLParser, content: LexborNode, to_markdown: Callable[[str], str]
) -> list[str]:
    """Replace tables with code blocks in their cells by numbered slots; return their HTML."""
    written: list[str] = []
    tables = [
        table for table in content.css("table") if table.css_first("td pre, th pre") is not None
    ]
    for table in outermost(tables, content):
        slot = tree.create_node("p")
        slot.insert_child(f"{TABLE}{len(written)}{TABLE}")
        written.append(_html_table(table, to_markdown))
        table.insert_before(slot, move=True)
        table.decompose()
    return written


def fill_slots(markdown: str, tables: list[str]) -> str:
    """Put each written table in its slot, under the slot's list indent or quote."""
    if not tables:
        return markdown

    def fill(match: re.Match[str]) -> str:
        number = int(match.group(2))
        return _indent(tables[number], match.group(1)) if number < len(tables) else ""

    return _TABLE_SLOT.sub(fill, markdown)
