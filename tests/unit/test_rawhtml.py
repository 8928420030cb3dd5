"""The raw HTML the converter writes into Markdown, and only that, is recognised as markup."""

from __future__ import annotations

import pytest

from sitelore.core.rawhtml import LINE_BREAK, TABLE_TAGS, is_table_tag_line, table_tag


@pytest.mark.parametrize(
    ("line", "markup"),
    [
        ("<table>", True),
        ("</td>", True),
        ('  <td colspan="2" rowspan="3">', True),
        ("<th>\t", True),
        ("<tr><td>x</td></tr>", False),  # a page's own HTML, quoted in its text
        ('<td class="x">', False),
        ("<td onclick=x>", False),
        ('<td colspan="two">', False),
        ("<tbody>", False),
        ("text <td>", False),
        ("", False),
    ],
)
def test_table_tag_lines(line: str, markup: bool) -> None:
    assert is_table_tag_line(line) is markup


@pytest.mark.parametrize("tag", TABLE_TAGS)
@pytest.mark.parametrize("spans", [None, {"colspan": "2"}, {"colspan": "2", "rowspan": "10"}])
def test_every_tag_the_converter_writes_is_recognised(
    tag: str, spans: dict[str, str] | None
) -> None:
    assert is_table_tag_line(table_tag(tag, spans=spans))
    assert is_table_tag_line(table_tag(tag, closing=True))


@pytest.mark.parametrize(
    ("text", "found"),
    [("a<br>b", "<br>"), ("a<br/>b", "<br/>"), ("a<BR />b", "<BR />"), ("<brx>", None)],
)
def test_line_breaks(text: str, found: str | None) -> None:
    match = LINE_BREAK.search(text)
    assert (match.group() if match else None) == found
