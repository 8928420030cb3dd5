"""Rewrite documentation-generator structures into plain HTML that converts faithfully.

Run on the cleaned content before it is written as Markdown, in place:

- rustdoc code headers (``h3/h4.code-header``) become headings holding the
  signature as inline code; ``<summary>`` wrappers around headings are unwrapped
  (html-to-markdown would bold the heading, ``**#### ...**``);
- a heading's link to itself (rustdoc's ``<h2><a href="#x">``) is unwrapped;
- API definition lists (Sphinx ``dl.py``/``dt.sig``, CMake, reST domains) become
  nested lists whose items start with the signature as inline code, then the body;
  DocBook tables of contents (``dl.toc``) become nested lists of links;
- lists used for layout (Javadoc's ``ul > li > section``) are unwrapped;
- footnotes (docutils ``aside.footnote``, ``dl.footnote``) become GFM footnotes:
  references ``[^1]`` and definitions ``[^1]: text``.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["prepare_structure"]

_HEADINGS = "h1, h2, h3, h4, h5, h6"
_SECTIONING = frozenset({"section", "h1", "h2", "h3", "h4", "h5", "h6"})
#: Classes that mark a definition list as API descriptions (Sphinx domains).
_API_DL_CLASSES = frozenset(
    {"py", "c", "cpp", "js", "rst", "std", "cmake", "function", "class", "method",
     "classmethod", "staticmethod", "attribute", "data", "exception", "describe", "object"}
)  # fmt: skip
_FOOTNOTE_REFS = "a.footnote-reference"
_FOOTNOTES = "aside.footnote, dl.footnote > dt, div.footnote"


def _squash(text: str) -> str:
    return " ".join(text.split())


def _plain(node: LexborNode) -> str:
    """The node's text as written (no separators injected), whitespace squashed."""
    return _squash(node.text(deep=True))


def _code_paragraph(tree: LexborHTMLParser, text: str, tag: str = "p") -> LexborNode:
    block = tree.create_node(tag)
    code = tree.create_node("code")
    code.insert_child(text)
    block.insert_child(code, move=True)
    return block


def _prepare_code_headers(content: LexborNode) -> None:
    for summary in content.css("summary"):
        if summary.css_first(_HEADINGS) is not None:
            summary.unwrap()
    for heading in content.css(_HEADINGS):
        classes = (heading.attributes.get("class") or "").split()
        if "code-header" in classes:
            text = _plain(heading)
            for child in list(heading.iter(include_text=True)):
                child.decompose()
            code_holder = heading.parser.create_node("code")
            code_holder.insert_child(text)
            heading.insert_child(code_holder, move=True)
            continue
        own_id = heading.attributes.get("id") or ""
        parent = heading.parent
        parent_id = parent.attributes.get("id") if parent is not None else None
        for link in heading.css("a[href^='#']"):
            target = (link.attributes.get("href") or "")[1:]
            if target and target in (own_id, parent_id):
                link.unwrap()


def _is_api_list(node: LexborNode) -> bool:
    classes = (node.attributes.get("class") or "").split()
    if any(name in _API_DL_CLASSES for name in classes):
        return True
    return any(
        child.tag == "dt" and "sig" in (child.attributes.get("class") or "").split()
        for child in node.iter()
    )


def _dl_to_list(tree: LexborHTMLParser, dl: LexborNode, signature: bool) -> None:
    """Replace ``dl`` by a ``ul``: one item per term, holding its definitions.

    Consecutive signatures (overloads) share one item.
    """
    listing = tree.create_node("ul")
    item: LexborNode | None = None
    after_dd = True
    for child in list(dl.iter()):
        if child.tag == "dt":
            if item is None or after_dd or not signature:
                item = tree.create_node("li")
                listing.insert_child(item, move=True)
                after_dd = False
            if signature:
                item.insert_child(_code_paragraph(tree, _plain(child)), move=True)
            else:
                for part in list(child.iter(include_text=True)):
                    item.insert_child(part, move=True)
        elif child.tag == "dd":
            if item is None:
                item = tree.create_node("li")
                listing.insert_child(item, move=True)
            for part in list(child.iter(include_text=True)):
                item.insert_child(part, move=True)
            after_dd = True
    dl.insert_before(listing, move=True)
    dl.decompose()


def _prepare_definition_lists(tree: LexborHTMLParser, content: LexborNode) -> None:
    toc = {node.mem_id for node in content.css("dl.toc, dl.toc dl")}
    # Innermost first: an outer list then moves already rebuilt inner ones.
    for dl in reversed(content.css("dl")):
        if dl.parent is None:
            continue
        if dl.mem_id in toc:
            _dl_to_list(tree, dl, signature=False)
        elif _is_api_list(dl):
            _dl_to_list(tree, dl, signature=True)


def _label(text: str) -> str:
    return "".join(text.split()).strip("[]")


def _prepare_footnotes(tree: LexborHTMLParser, content: LexborNode) -> None:
    notes = content.css(_FOOTNOTES)
    if not notes:
        return
    for ref in content.css(_FOOTNOTE_REFS):
        label = _label(ref.text(deep=True))
        if label:
            ref.replace_with(f"[^{label}]")
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
        text = _squash(body.text(deep=True))
        para = tree.create_node("p")
        para.insert_child(f"[^{label}]: {text}")
        if note.tag == "dt":
            body.decompose()
        note.insert_before(para, move=True)
        note.decompose()
    for wrapper in content.css("aside.footnote-list"):
        wrapper.unwrap()
    # GFM renders footnotes at the end of the page: their "Footnotes" rubric would dangle.
    for rubric in content.css("p.rubric"):
        if _plain(rubric).lower() == "footnotes":
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


def prepare_structure(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Rewrite code headers, API and TOC definition lists and footnotes in ``content``."""
    _unwrap_layout_lists(content)
    _prepare_code_headers(content)
    _prepare_footnotes(tree, content)
    _prepare_definition_lists(tree, content)
