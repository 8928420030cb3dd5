"""Rewrite documentation-generator structures into plain HTML that converts faithfully.

Run on the cleaned content before it is written as Markdown, in place:

- rustdoc code headers (``h3/h4.code-header``) become headings holding the
  signature as inline code; ``<summary>`` wrappers around headings are unwrapped
  (html-to-markdown would bold the heading, ``**#### ...**``);
- a heading's link to itself (rustdoc's ``<h2><a href="#x">``, Haddock's
  ``<a href="#x" id="x"><h1>``) is unwrapped, the heading keeping the link's id;
- definition lists become lists with one item per term holding its definitions:
  API descriptions (Sphinx ``dl.py``/``dt.sig``, CMake, reST domains) start with the
  signature as inline code, glossaries and variable lists with the term in bold
  (plain when it holds links), and outlines, whose definitions only nest more
  entries (DocBook tables of contents and back-of-book indexes), with the entry as
  it is and its sub-entries nested under it;
- rustdoc's item tables (a module's items, name and summary) become lists, and
  Javadoc's CSS-grid summaries (``div.summary-table``) become tables;
- table rows holding nothing are dropped, and a heading filling a table's first
  row (Doxygen's "Classes", "Functions") is moved before the table;
- lists used for layout (Javadoc's ``ul > li > section``) are unwrapped, and so
  are tables used for layout: one row of cells holding blocks (Sphinx's index
  columns, gtk-doc's title block and code listings), which html-to-markdown would
  squash into one table row or write as lists nested one space deep, and tables of
  one cell (a framed box or title, Doxygen's member name), which it would write as
  a table whose only row is its header;
- footnotes (docutils ``aside.footnote``, ``dl.footnote``) become GFM footnotes:
  references ``[^1]`` and definitions ``[^1]: text``;
- an exponent (``2<sup>31</sup>``, ``x<sup>n-1</sup>``) is written with a caret
  (``2^31``, ``x^(n-1)``): Markdown has no superscript, and html-to-markdown would
  write ``231``. Ordinals and marks (``1<sup>st</sup>``, ``<sup>TM</sup>``), links
  (footnote references) and code keep their text as it is.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.convert._marks import BLANK_CELL, MARKUP_CLOSE, MARKUP_OPEN
from sitelore.core.convert._tree import (
    classes,
    move_children,
    remove_outermost,
    squashed_text,
    within,
)

__all__ = ["blank_table_headers", "prepare_structure", "unwrap_layout_tables"]

_HEADINGS = "h1, h2, h3, h4, h5, h6"
_TABLE = ("table",)
#: Headings this pass rewrites: rustdoc code headers, and those holding a link to a fragment.
_CODE_HEADERS = (
    f".code-header:is({_HEADINGS}), :is({_HEADINGS}) a[href^='#'], a[href^='#'] > :is({_HEADINGS})"
)
_SECTIONING = frozenset({"section", "h1", "h2", "h3", "h4", "h5", "h6"})
#: Classes that mark a definition list as API descriptions (Sphinx domains).
_API_DL_CLASSES = frozenset(
    {"py", "c", "cpp", "js", "rst", "std", "cmake", "function", "class", "method",
     "classmethod", "staticmethod", "attribute", "data", "exception", "describe", "object"}
)  # fmt: skip
#: Elements whose presence in a cell makes a one-row table a layout table.
_BLOCKS = "p, ul, ol, dl, pre, div, table, blockquote, h1, h2, h3, h4, h5, h6"
_FOOTNOTE_REFS = "a.footnote-reference"
_FOOTNOTES = "aside.footnote, dl.footnote > dt, div.footnote"
#: Whatever the summaries, footnotes, definition lists, item and grid tables passes look for.
_GENERATED = (
    "summary, dl, aside.footnote, div.footnote, div.item-left, div.item-table, div.summary-table"
)


#: What an exponent holds: a number, a letter or a short expression of them.
_EXPONENT = re.compile(
    r"[-+\u2212]?(?:\d[\w.]*|[A-Za-z]\w{0,2}|[\w.()+*/\u2212 -]*\d[\w.()+*/\u2212 -]*)"
)
#: An exponent written after the caret as it is; any other goes in parentheses.
_PLAIN_EXPONENT = re.compile(r"[-+\u2212]?[\w.]+")
_BASE_END = re.compile(r"[\w)\]]$")
_CODE = ("pre", "code")


def _exponent(sup: LexborNode) -> str | None:
    """The caret form of ``sup`` when it is an exponent of the text before it, else None."""
    if any(child.is_element_node for child in sup.iter()):
        return None  # a link (a footnote reference) or markup: left as it is
    text = " ".join((sup.text() or "").split())
    if not text or len(text) > 24 or not _EXPONENT.fullmatch(text):
        return None
    if text.isalpha() and len(text) > 1:
        return None  # "1st", "TM": a mark, not a power
    before = sup.prev
    if before is None or not before.is_text_node or not _BASE_END.search(before.text() or ""):
        return None
    return f"^{text}" if _PLAIN_EXPONENT.fullmatch(text) else f"^({text})"


def _prepare_superscripts(content: LexborNode) -> None:
    for sup in content.css("sup"):
        caret = _exponent(sup)
        if caret is not None and not within(sup, _CODE, content):
            sup.replace_with(caret)


def _code_paragraph(tree: LexborHTMLParser, text: str, tag: str = "p") -> LexborNode:
    block = tree.create_node(tag)
    code = tree.create_node("code")
    code.insert_child(text)
    block.insert_child(code, move=True)
    return block


def _prepare_code_headers(content: LexborNode) -> None:
    if content.css_first(_CODE_HEADERS) is None:
        return  # most pages: one query, not one per heading
    for heading in content.css(_HEADINGS):
        if "code-header" in classes(heading):
            # rustdoc breaks long parameter lists after "(": no space belongs there.
            text = squashed_text(heading).replace("( ", "(")
            for child in list(heading.iter(include_text=True)):
                child.decompose()
            code_holder = heading.parser.create_node("code")
            code_holder.insert_child(text)
            heading.insert_child(code_holder, move=True)
            continue
        _unwrap_permalinks(heading)


def _anchor_name(node: LexborNode) -> str:
    return node.attributes.get("id") or node.attributes.get("name") or ""


def _unwrap_permalinks(heading: LexborNode) -> None:
    """Unwrap the links from ``heading`` to itself, inside it or around it.

    Haddock wraps its headings, ``<a href="#g:1" id="g:1"><h1>``; Markdown renderers
    put ``<a href="#x" id="x">`` inside them. The heading takes over the link's id.
    """
    wrapper = heading.parent
    if (
        wrapper is not None
        and wrapper.tag == "a"
        and (wrapper.attributes.get("href") or "#")[1:]
        in (_anchor_name(wrapper), heading.attributes.get("id"))
        and all(child.mem_id == heading.mem_id for child in wrapper.iter())
    ):
        if not heading.attributes.get("id") and _anchor_name(wrapper):
            heading.attrs["id"] = _anchor_name(wrapper)
        wrapper.unwrap()
    own_id = heading.attributes.get("id") or ""
    parent = heading.parent
    parent_id = parent.attributes.get("id") if parent is not None else None
    for link in heading.css("a[href^='#']"):
        target = (link.attributes.get("href") or "")[1:]
        link_id = _anchor_name(link)
        if target and target in (own_id, parent_id, link_id):
            if not own_id and link_id:
                heading.attrs["id"] = own_id = link_id
            link.unwrap()


def _is_api_list(node: LexborNode) -> bool:
    if any(name in _API_DL_CLASSES for name in classes(node)):
        return True
    return any(child.tag == "dt" and "sig" in classes(child) for child in node.iter())


def _term(tree: LexborHTMLParser, dt: LexborNode) -> LexborNode:
    """A glossary term as a paragraph: bold unless it holds links (they say what it is)."""
    para = tree.create_node("p")
    holder = para
    if dt.css_first("a[href]") is None:
        holder = tree.create_node("strong")
        para.insert_child(holder, move=True)
    move_children(dt, holder)
    return para


def _prepare_item_tables(tree: LexborHTMLParser, content: LexborNode) -> None:
    """rustdoc's item tables (``div.item-row`` of name and summary) become lists.

    Each row is an item holding the name, then the summary; a stability badge
    ("Experimental") is set apart from the name it follows.
    """
    for badge in content.css("div.item-left .stab"):
        badge.insert_before(" ")
    for table in content.css("div.item-table"):
        listing = tree.create_node("ul")
        for row in [child for child in table.iter() if child.is_element_node]:
            item = tree.create_node("li")
            for cell in [child for child in row.iter() if child.is_element_node]:
                item.insert_child(move_children(cell, tree.create_node("div")), move=True)
            listing.insert_child(item, move=True)
        table.insert_before(listing, move=True)
        table.decompose()


def _prepare_grid_tables(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Javadoc's CSS-grid summaries (``div.summary-table``) become tables.

    The grid's children are its cells in reading order, the first ones marked
    ``table-header``; their count is the number of columns.
    """
    for grid in content.css("div.summary-table"):
        cells = [child for child in grid.iter() if child.is_element_node]
        width = sum(1 for cell in cells if "table-header" in classes(cell))
        if width < 2 or len(cells) % width:
            continue
        table = tree.create_node("table")
        for start in range(0, len(cells), width):
            row = tree.create_node("tr")
            for cell in cells[start : start + width]:
                tag = "th" if "table-header" in classes(cell) else "td"
                row.insert_child(move_children(cell, tree.create_node(tag)), move=True)
            table.insert_child(row, move=True)
        grid.insert_before(table, move=True)
        grid.decompose()


def _is_outline(dl: LexborNode) -> bool:
    """Whether every definition of ``dl`` only nests more entries (a TOC, an index).

    Runs innermost first, so nested definition lists are already lists here.
    """
    for child in dl.iter():
        if child.tag != "dd":
            continue
        for part in child.iter(include_text=True):
            if part.tag == "-text":
                if (part.text_content or "").strip():
                    return False
            elif part.tag not in ("ul", "ol", "dl"):
                return False
    return True


def _dl_to_list(tree: LexborHTMLParser, dl: LexborNode, kind: str) -> None:
    """Replace ``dl`` by a ``ul``: one item per term, holding its definitions.

    ``kind`` says how a term is written: ``"signature"`` as inline code (consecutive
    signatures, overloads, share one item), ``"term"`` as a paragraph of its own
    (:func:`_term`), ``"outline"`` as it is, its nested entries under it.
    """
    listing = tree.create_node("ul")
    item: LexborNode | None = None
    after_dd = True
    for child in list(dl.iter()):
        if child.tag == "dt":
            if item is None or after_dd or kind != "signature":
                item = tree.create_node("li")
                listing.insert_child(item, move=True)
                after_dd = False
            if kind == "signature":
                item.insert_child(_code_paragraph(tree, squashed_text(child)), move=True)
            elif kind == "term":
                item.insert_child(_term(tree, child), move=True)
            else:
                move_children(child, item)
        elif child.tag == "dd":
            if item is None:
                item = tree.create_node("li")
                listing.insert_child(item, move=True)
            move_children(child, item)
            after_dd = True
    dl.insert_before(listing, move=True)
    dl.decompose()


def _prepare_definition_lists(tree: LexborHTMLParser, content: LexborNode) -> None:
    # Innermost first: an outer list then moves already rebuilt inner ones.
    for dl in reversed(content.css("dl")):
        if dl.parent is None:
            continue
        kind = "signature" if _is_api_list(dl) else "outline" if _is_outline(dl) else "term"
        _dl_to_list(tree, dl, kind)


def _label(text: str) -> str:
    return "".join(text.split()).strip("[]")


def _prepare_footnotes(tree: LexborHTMLParser, content: LexborNode) -> None:
    notes = content.css(_FOOTNOTES)
    if not notes:
        return
    for ref in content.css(_FOOTNOTE_REFS):
        label = _label(ref.text(deep=True))
        if label:
            ref.replace_with(f"{MARKUP_OPEN}^{label}{MARKUP_CLOSE}")
    for note in notes:
        if note.parent is None:
            continue
        if note.tag == "dt":  # old docutils: <dl class="footnote"><dt>label</dt><dd>text</dd>
            label_node: LexborNode | None = note
            body = note.next
            while body is not None and body.tag != "dd":
                body = body.next
        else:
            label_node = note.css_first(".label, .fn-backref, a[role=doc-backlink]")
            body = note
        label = _label(label_node.text(deep=True)) if label_node is not None else ""
        if not label or body is None:
            continue
        if label_node is not None and label_node is not note:
            label_node.decompose()
        for backrefs in body.css(".backrefs"):  # "(1,2,3)": links back to each reference
            backrefs.decompose()
        text = squashed_text(body)
        para = tree.create_node("p")
        para.insert_child(f"{MARKUP_OPEN}^{label}{MARKUP_CLOSE}: {text}")
        if note.tag == "dt":
            body.decompose()
        note.insert_before(para, move=True)
        note.decompose()
    for wrapper in content.css("aside.footnote-list"):
        wrapper.unwrap()
    # GFM renders footnotes at the end of the page: their "Footnotes" rubric would dangle.
    for rubric in content.css("p.rubric"):
        if squashed_text(rubric).lower() == "footnotes":
            rubric.decompose()


def _first_element(node: LexborNode) -> LexborNode | None:
    return next((child for child in node.iter() if child.is_element_node), None)


def _unwrap_layout_lists(content: LexborNode) -> None:
    """Unwrap lists used for page layout: every item starts with a section or heading.

    Javadoc nests its summary and detail sections in ``ul > li > section``, which
    would write each heading as a list item (``- ## Method Summary``).
    """
    for listing in reversed(content.css("ul, ol")):
        items = [child for child in listing.iter() if child.is_element_node]
        if not items or any(item.tag != "li" for item in items):
            continue
        firsts = [_first_element(item) for item in items]
        if all(f is not None and f.tag in _SECTIONING for f in firsts):
            for item in items:
                item.unwrap()
            listing.unwrap()


def _own_rows(table: LexborNode) -> list[LexborNode]:
    """The rows of ``table`` itself, not those of tables nested in its cells."""
    rows: list[LexborNode] = []
    for child in table.iter():
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            rows.extend(row for row in child.iter() if row.tag == "tr")
    return rows


def _prepare_table_rows(content: LexborNode) -> None:
    """Drop rows holding nothing, and lift a heading that fills a table's first row.

    Doxygen's member tables open with a row holding the section's h2 ("Classes",
    "Functions") and put an empty separator row after every member: the heading
    would become a table header cell and each separator an empty row.
    """
    empty = [
        row
        for row in content.css("tr")
        if not row.text(deep=True).strip() and row.css_first("img, pre") is None
    ]
    remove_outermost(empty, content)
    for table in content.css("table"):
        rows = _own_rows(table)
        heading = rows[0].css_first(_HEADINGS) if rows else None
        if heading is not None and squashed_text(heading) == squashed_text(rows[0]):
            table.insert_before(heading, move=True)
            rows[0].decompose()


def _is_layout_table(table: LexborNode) -> bool:
    """One row of one cell (a box, gtk-doc's title), or of cells holding blocks or nothing."""
    rows = _own_rows(table)
    if len(rows) != 1:
        return False
    cells = [cell for cell in rows[0].iter() if cell.is_element_node]
    if len(cells) == 1 and cells[0].tag in ("td", "th"):
        return True
    if not cells or any(cell.tag != "td" for cell in cells):
        return False
    return all(
        cell.css_first(_BLOCKS) is not None or not cell.text(deep=True).strip() for cell in cells
    )


def unwrap_layout_tables(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Replace each layout table by its cells' content, one ``div`` per cell, in order."""
    # Innermost first: an outer table then moves already unwrapped inner ones.
    for table in reversed(content.css("table")):
        if table.parent is None or not _is_layout_table(table):
            continue
        for cell in _own_rows(table)[0].iter():
            table.insert_before(move_children(cell, tree.create_node("div")), move=True)
        table.decompose()


def blank_table_headers(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Give a table whose first row is data (not all ``th``, not in ``thead``) an empty header.

    A Markdown table's first row is its header; written from a table of parameters
    or settings (gtk-doc, Doxygen, key/value tables with ``th`` row headers), the
    first data row read as column names. The added row's cells hold
    :data:`~sitelore.core.convert._marks.BLANK_CELL`, made empty with the Markdown.
    Tables inside tables are left to the converter (they are flattened).
    """
    for table in content.css("table"):
        # The first row shown: a <tfoot> may come first in the source (HTML 4).
        rows = [row for row in _own_rows(table) if row.parent is None or row.parent.tag != "tfoot"]
        if not rows or table.parent is None or within(table, _TABLE, content):
            continue
        cells = [cell for cell in rows[0].iter() if cell.tag in ("td", "th")]
        head = rows[0].parent is not None and rows[0].parent.tag == "thead"
        if not cells or head or all(cell.tag == "th" for cell in cells):
            continue
        width = sum(_span(cell) for cell in cells)
        header = tree.create_node("tr")
        for _ in range(width):
            blank = tree.create_node("th")
            blank.insert_child(BLANK_CELL)
            header.insert_child(blank)
        rows[0].insert_before(header, move=True)


def _span(cell: LexborNode) -> int:
    value = cell.attributes.get("colspan") or ""
    return min(int(value), 64) if value.isascii() and value.isdigit() and int(value) > 0 else 1


def prepare_structure(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Rewrite layout lists, code headers, footnotes and definition lists in ``content``."""
    # One query tells whether the generator-specific rewrites have anything to do (rarely):
    # the rewrites before them only move or remove, so they cannot make anything match.
    generated = content.css_first(_GENERATED) is not None
    _unwrap_layout_lists(content)
    _prepare_table_rows(content)
    for summary in content.css("summary") if generated else ():
        if summary.css_first(_HEADINGS) is not None:
            summary.unwrap()
    _prepare_code_headers(content)
    _prepare_superscripts(content)
    if generated:
        _prepare_footnotes(tree, content)
        _prepare_definition_lists(tree, content)
        _prepare_item_tables(tree, content)
        _prepare_grid_tables(tree, content)
