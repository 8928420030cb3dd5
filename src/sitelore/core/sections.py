"""Split a document's Markdown into sections by its headings: the unit of retrieval.

A section is the text under one heading (down to the next heading of any level), with
the path of headings above it, the id of its heading (``## Timeouts {#timeouts}``, as
the converter writes it) and its byte range in the Markdown. Code blocks and tables
are never cut; a section longer than the token budget is cut between paragraphs
(blocks), each part keeping the heading path and anchor; a list of links (a table of
contents, an index) is a part of its own, with the short label before it, so that its
``link_ratio`` (the share of its text on link lines, :func:`link_line`) tells search
it is a hub, and the prose beside it is not taken for one. Text before the first
heading is a section with an empty path. A heading with no text under it makes no
section of its own (its children carry it in their paths).

:func:`plain_text` is what gets indexed: the Markdown without link targets, fences,
table pipes and emphasis marks, so a snippet cut from it never marks a word inside a
URL or a code span. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import string
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from sitelore.core.fences import closes_fence, opening_fence
from sitelore.core.models import Document, Section
from sitelore.core.rawhtml import LINE_BREAK, is_table_tag_line

__all__ = [
    "SECTIONS_VERSION",
    "SECTION_TOKENS",
    "Section",
    "anchor_url",
    "estimate_tokens",
    "heading_line",
    "link_line",
    "plain_text",
    "split_sections",
    "strip_heading_ids",
    "with_sections",
]

#: The most tokens (about four characters each) of one section, unless one block alone
#: is longer (a code block or table is never cut).
SECTION_TOKENS = 400
#: Bump when the splitter changes what it cuts or indexes: stores cut older documents
#: again when they open (2: block quote markers left out of the text; 3: line breaks
#: in table cells and the tags of tables written as HTML left out too; 4: ``link_ratio``
#: counts the text on link lines, see :func:`link_line`; 5: the quote markers of code
#: inside a block quote left out; 6: an escaped ``\<br>``, the page's own text, kept;
#: 7: code spans keep their text whole, ``*args`` and ``__init__`` were cut to words).
SECTIONS_VERSION = 7

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
# html-to-markdown writes a heading inside <summary> (rustdoc's methods) as "**#### x**".
_BOLD_HEADING = re.compile(r"^\*\*(#{1,6}[ \t].*)\*\*[ \t]*$")
_HEADING_ID = re.compile(r"[ \t]*\{#([^\s{}]+)\}[ \t]*$")
_CLOSING_HASHES = re.compile(r"[ \t]+#+$")
_FENCE_INDENT = " \t>"  # skipped before a fence here: spaces, tabs, block quote markers
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t:|-]*-[ \t:|-]*$")
# "[text](target "title")": escapes in the text, one level of parentheses in the target,
# each as runs of plain characters between special ones (no alternation per character).
_LINK = re.compile(
    r"\[([^\[\]\\]*(?:\\.[^\[\]\\]*)*)\]"
    r"\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:[ \t]+\"[^\"]*\")?\)"
)
_IMAGE = re.compile(r"(?<!\\)!" + _LINK.pattern)  # "\!" is an escaped "!", then a link
_AUTOLINK = re.compile(r"<(?:https?|mailto|ftp):[^>\s]*>")
_BARE_URL = re.compile(r"\b(?:https?|ftp)://[^\s\ufdef]+")  # up to a code span's slot
# Each alternative starts with its mark (its lookbehinds after it), so the regex engine
# jumps from "*" to "*"; only text with "__" needs _EMPHASIS (two marks: a slower scan).
_STARS = (
    r"\*\*(?<!\\\*\*)"  # "**", not escaped
    r"|\*(?<![\w*\\]\*)(?=\S)"  # an opening "*": not after a word, "*" or "\", before a non-space
    r"|\*(?<=[^\s\\]\*)(?![\w*])"  # a closing "*": after a non-space, not before a word or "*"
)
_STAR_EMPHASIS = re.compile(_STARS)
_EMPHASIS = re.compile(r"__(?<!\\__)|" + _STARS)  # and "__", not escaped
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_SPACES = re.compile(r"[ \t\u00a0]+")
# A line break inside a table cell, matched after any code span so that a "`<br>`" in
# the text stays, and never escaped: "\<br>" is the page's own text.
_BREAK = re.compile(r"`[^`]*`|(?<!\\)" + LINE_BREAK.pattern, re.IGNORECASE)
_QUOTE = re.compile(r"^(?:[ \t]{0,3}>)+[ \t]?")
_TICKS = re.compile(r"`+")
#: Where a code span stands while the rest of its line is made plain (a noncharacter:
#: never in a page's text, see ``convert._marks``), and the pattern of such a slot.
_SLOT = "\ufdef"
_SLOTTED = re.compile(_SLOT + r"(\d+)" + _SLOT)
_TICK = "\ufdee"  # an escaped backtick while the stray ones go
#: One to eight levels of quote markers, no more (a code line's own ">" stays).
_QUOTE_LEVELS = tuple(re.compile(rf"(?:[ \t]{{0,3}}>){{1,{n}}}[ \t]?") for n in range(1, 9))
_FIRST_GROUP = operator.itemgetter(1)  # a match's first group: faster than r"\1"
_WORD_CHAR = re.compile(r"\w")
# Word characters are what these leave (ASCII punctuation but "_", spaces and NUL go):
# a C loop, where a regex per line cost a fifth of the cutting time.
_NOT_WORDS = string.punctuation.replace("_", "") + string.whitespace + "\0"
_ONLY_WORDS = str.maketrans("", "", _NOT_WORDS)
_SPLIT_WORDS = str.maketrans(_NOT_WORDS, " " * len(_NOT_WORDS))
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]")
#: The most words outside links of a line that ends with a link and is an index entry
#: ("vacuum_freeze_min_age configuration parameter, [Statement Behavior]": three).
_ENTRY_WORDS = 8
#: A block of at least this many link lines, mostly links, is a list of links: a section
#: of its own (its text alone then says it is a hub)...
_LIST_ENTRIES = 3
#: ... and a run of prose this short before it (a label: "Table of Contents") joins it.
_LEAD_IN_TOKENS = 16


class _Block(NamedTuple):  # a tuple: made twice as fast as a frozen dataclass
    start: int
    end: int
    text: str
    heading: tuple[int, str, str | None] | None = None  # level, text, id
    linked: int = 0  # characters of plain text on link lines
    entries: int = 0  # link lines


def heading_line(line: str) -> tuple[int, str, str | None] | None:
    """``(level, text, id)`` of an ATX heading line, None for any other line.

    >>> heading_line("## Timeouts {#timeouts}")
    (2, 'Timeouts', 'timeouts')
    >>> heading_line("#hashtag") is None
    True
    """
    if not line.startswith(("#", "**#")):  # neither pattern can match: the common case
        return None
    bold = _BOLD_HEADING.match(line)
    match = _HEADING.match(bold.group(1) if bold else line)
    if match is None:
        return None
    text = match.group(2)
    found = _HEADING_ID.search(text)
    ident = found.group(1) if found else None
    text = _CLOSING_HASHES.sub("", text[: found.start()] if found else text)
    return len(match.group(1)), _inline(text).strip(), ident


def strip_heading_ids(markdown: str) -> str:
    """``markdown`` without the `` {#id}`` that ends its headings, code left as it is.

    For readers that do not know the attribute syntax (Firecrawl's clients).
    """
    lines = markdown.split("\n")
    fence: str | None = None
    for index, line in enumerate(lines):
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
        elif (fence := opening_fence(line)) is None and _HEADING.match(line):
            lines[index] = _HEADING_ID.sub("", line)
    return "\n".join(lines)


def estimate_tokens(text: str) -> int:
    """About how many model tokens ``text`` is (four characters each, at least one)."""
    return len(text) // 4 + 1


def _blocks(markdown: str) -> Iterator[_Block]:
    """Paragraphs, headings, whole code blocks and tables, with their byte ranges."""
    offset = 0
    start = 0
    lines: list[str] = []
    linked = entries = 0
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        size = len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
        bare = line.rstrip("\r\n")
        if fence:
            lines.append(bare)
            if closes_fence(bare, fence):
                fence = None
        elif not bare.strip():
            if lines:
                yield _Block(start, offset, "\n".join(lines), None, linked, entries)
                lines = []
                linked = entries = 0
        elif (heading := heading_line(bare)) is not None:
            if lines:
                yield _Block(start, offset, "\n".join(lines), None, linked, entries)
                lines = []
                linked = entries = 0
            yield _Block(offset, offset + size, bare, heading)
        else:
            if not lines:
                start = offset
            fence = opening_fence(bare, _FENCE_INDENT)
            if fence is None and "](" in bare and (on_link := _link_line_size(bare)):
                linked += on_link
                entries += 1
            lines.append(bare)
        offset += size
    if lines:
        yield _Block(start, offset, "\n".join(lines), None, linked, entries)


def _parts(
    blocks: Sequence[_Block], texts: Sequence[str], budget: int
) -> Iterator[list[tuple[_Block, str]]]:
    """``blocks`` (with their plain ``texts``) packed in order into runs of ``budget`` tokens.

    A block longer than the budget is a run alone; a list of links (a table of contents,
    an index) is a run of its own, never mixed with prose, and a short lead-in before a
    block ("Table of Contents", "For example:") stays with it.
    """
    run: list[tuple[_Block, str]] = []
    used = 0
    links = False
    for block, text in zip(blocks, texts, strict=True):
        cost = estimate_tokens(block.text)
        is_links = block.entries >= _LIST_ENTRIES and 2 * block.linked >= len(text)
        lead_in = used <= _LEAD_IN_TOKENS and not links
        if run and not lead_in and (used + cost > budget or is_links != links):
            yield run
            run, used = [], 0
        if not run or lead_in:
            links = is_links
        run.append((block, text))
        used += cost
    if run:
        yield run


def split_sections(markdown: str, *, max_tokens: int = SECTION_TOKENS) -> list[Section]:
    """The sections of ``markdown``, in document order, numbered from 0."""
    sections: list[Section] = []
    path: list[tuple[int, str, str | None]] = []
    heading_start: int | None = None
    body: list[_Block] = []

    def flush() -> None:
        names = tuple(text for _, text, _ in path)
        anchor = next((ident for _, _, ident in reversed(path) if ident), None)
        texts = [plain_text(block.text) for block in body]
        for number, run in enumerate(_parts(body, texts, max_tokens)):
            first = run[0][0].start
            if number == 0 and heading_start is not None:
                first = heading_start
            text = "\n\n".join(part for _, part in run).strip()
            if not text:
                continue
            linked = sum(block.linked for block, _ in run)
            sections.append(
                Section(
                    ordinal=len(sections),
                    heading_path=names,
                    anchor=anchor,
                    start=first,
                    end=run[-1][0].end,
                    text=text,
                    link_ratio=min(1.0, linked / len(text)),
                )
            )

    for block in _blocks(markdown):
        if block.heading is None:
            body.append(block)
            continue
        flush()
        body = []
        level = block.heading[0]
        while path and path[-1][0] >= level:
            path.pop()
        path.append(block.heading)
        heading_start = block.start
    flush()
    return sections


def with_sections(document: Document) -> Document:
    """``document`` with its sections cut (done where conversion runs, off the event loop)."""
    return dataclasses.replace(document, sections=tuple(split_sections(document.markdown)))


def link_line(line: str) -> bool:
    """Whether a line of Markdown is an entry of a list of links, not prose with a link.

    A link line holds a link and either is mostly link text (a table of contents, a
    module list, a row of letters) or is a list item that ends with a link after a few
    words (a back-of-book index entry, "term, [Section]"; Javadoc's "[name] - Method in
    class [Type]").

    >>> link_line("- [13.1. Introduction](mvcc-intro.html)")
    True
    >>> link_line("- vacuum_freeze_min_age configuration parameter, [Statement Behavior](x.html)")
    True
    >>> link_line("Use [`Vec::with_capacity`](v.html) whenever you know the size beforehand.")
    False
    """
    return _link_line_size(line) > 0


def _link_line_size(line: str) -> int:
    """About the length of ``line``'s plain text if it is a link line, else 0."""
    texts = _LINK.findall(line)
    if not texts:
        return 0
    outside = _LINK.sub("\0", line)  # each link a NUL: what follows the last is its tail
    linked = "".join(texts)
    if len(linked.translate(_ONLY_WORDS)) < len(outside.translate(_ONLY_WORDS)) and (
        not _LIST_ITEM.match(line)
        or _WORD_CHAR.search(outside.rpartition("\0")[2])
        or len(outside.translate(_SPLIT_WORDS).split()) > _ENTRY_WORDS
    ):
        return 0  # prose, or an item with words after its last link ("[x](…): what x does")
    return len(outside.strip()) - len(texts) + len(linked)


def _inline(text: str) -> str:
    """One line of Markdown as plain words: no link targets, emphasis marks or escapes.

    Code spans keep every character but their backticks (``*args``, ``__init__``, a
    URL): they are found first and stand aside as numbered slots while links and the
    rest are taken out (a link's text may hold code, code may sit beside a link). Each
    pattern runs only when the text holds what every match of it must contain (most
    lines have no code, link, image, URL, emphasis or escape): the result is the same.
    """
    if "`" not in text:
        if "]" in text:  # in every image and link (a single character is the fastest test)
            text = _LINK.sub(_FIRST_GROUP, _IMAGE.sub(_FIRST_GROUP, text))
        return _prose(text)
    if _SLOT in text or _TICK in text:  # the document's own: never taken for ours
        text = text.replace(_SLOT, "").replace(_TICK, "")
    if "``" not in text and "\\`" not in text and text.count("`") % 2 == 0:
        parts = text.split("`")  # single backticks, each closed: odd parts are code
        if "]" not in text:
            parts[::2] = [_prose(part) if part else part for part in parts[::2]]
            return "".join(parts)
        codes = parts[1::2]
    else:
        spans = _code_spans(text)
        codes = [code for _, _, code in spans]
        parts, start = [], 0
        for begin, end, code in spans:
            parts += (text[start:begin], code)
            start = end
        parts.append(text[start:])
    parts[1::2] = [f"{_SLOT}{number}{_SLOT}" for number in range(len(codes))]
    text = "".join(parts)
    if "]" in text:
        text = _LINK.sub(_FIRST_GROUP, _IMAGE.sub(_FIRST_GROUP, text))
    text = _prose(text)
    return _SLOTTED.sub(lambda slot: codes[int(slot.group(1))], text) if codes else text


def _code_spans(text: str) -> list[tuple[int, int, str]]:
    """The code spans of a line: (start, end, code), in one pass (CommonMark 6.1).

    A run of backticks opens a span that the next run of the same length closes; a run
    with no such partner is text. A run after a backslash opens nothing (an escaped
    backtick). The code loses one space at each end when it has one at both.
    """
    runs = [(match.start(), match.end()) for match in _TICKS.finditer(text)]
    partner: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        partner[index] = last.get(length)
        last[length] = index
    spans: list[tuple[int, int, str]] = []
    index = 0
    while index < len(runs):
        closing = partner[index]
        begin = runs[index][0]
        if closing is None or (begin and text[begin - 1] == "\\"):
            index += 1
            continue
        code = text[runs[index][1] : runs[closing][0]]
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
            code = code[1:-1]
        spans.append((begin, runs[closing][1], code))
        index = closing + 1
    return spans


def _prose(text: str) -> str:
    """Text outside code spans as plain words (see :func:`_inline`)."""
    if "<" in text:
        text = _AUTOLINK.sub("", text)
        if "<br" in text or "<BR" in text:
            text = _BREAK.sub(_space_unless_code, text)
    if ":" in text and "://" in text:  # most lines have no ":" (a faster test)
        text = _BARE_URL.sub("", text)
    if "`" in text:  # stray backticks go; an escaped one ("\\`") is the page's own
        text = text.replace("\\`", _TICK).replace("`", "").replace(_TICK, "\\`")
    if "__" in text:
        text = _EMPHASIS.sub("", text)
    elif "*" in text:
        text = _STAR_EMPHASIS.sub("", text)
    if "\\" in text:
        text = _ESCAPE.sub(_FIRST_GROUP, text)
    return text


def _space_unless_code(match: re.Match[str]) -> str:
    found = match.group()
    return found if found.startswith("`") else " "


def _unquoted(line: str, levels: int) -> str:
    """A code line of a block quote without its quote markers (at most ``levels``)."""
    marks = _QUOTE_LEVELS[min(levels, len(_QUOTE_LEVELS)) - 1].match(line)
    return line[marks.end() :] if marks is not None else line


def plain_text(markdown: str) -> str:
    """The words of a block (or more) of Markdown, as indexed and shown in snippets.

    Fence lines, table rules and pipes, the tags of tables written as HTML, line breaks
    in cells (``<br>``), block quote markers, link targets, bare URLs, backticks and
    emphasis marks go; code keeps its text; runs of spaces become one.

    >>> plain_text("See [json](https://x/json.html) and `os.path`\\n| a |  b |\\n|---|---|")
    'See json and os.path\\na b'
    """
    out: list[str] = []
    fence: str | None = None
    quoted = 0  # block quote levels around the open fence
    for line in markdown.splitlines():
        if fence:  # code keeps every character (">>>" prompts included)
            if closes_fence(line, fence):
                fence = None
            else:
                out.append((_unquoted(line, quoted) if quoted else line).rstrip())
            continue
        quoted = 0
        if line.lstrip().startswith(">"):
            marks = _QUOTE.match(line)  # a block quote's text, not its ">" markers
            if marks is not None:
                quoted = marks.group().count(">")
                line = line[marks.end() :]
        fence = opening_fence(line, _FENCE_INDENT)
        if fence:
            continue
        if "|" in line and _TABLE_RULE.match(line):
            continue
        if is_table_tag_line(line):
            continue
        heading = heading_line(line)
        if heading is not None:
            out.append(heading[1])
            continue
        text = _inline(line)
        if text.lstrip().startswith("|"):
            text = text.replace("|", " ")
        if "  " in text or "\t" in text or "\xa0" in text:  # else every run is one space
            text = _SPACES.sub(" ", text)
        out.append(text.strip())
    return "\n".join(out).strip()


def anchor_url(url: str, anchor: str | None) -> str:
    """``url#anchor`` (any fragment of ``url`` replaced), or ``url`` without an anchor."""
    base = url.split("#", 1)[0]
    return f"{base}#{anchor}" if anchor else url
