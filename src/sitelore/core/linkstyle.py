"""Rewrite the links of a document's Markdown: inline, reference-style, or text only.

A pure function on Markdown, so stored documents need no reconversion:

- ``inline``: unchanged, ``[text](url)``;
- ``reference``: ``[text][1]`` in the text and the URLs once each in a numbered list
  of reference definitions at the end (``[1]: url``), like citations;
- ``none``: the link text only.

Code (fenced blocks, inline code spans) and images are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from sitelore.core.fences import closes_fence, opening_fence

__all__ = ["LINK_STYLES", "LinkStyle", "restyle_links"]

LinkStyle = Literal["inline", "reference", "none"]
LINK_STYLES: tuple[LinkStyle, ...] = ("inline", "reference", "none")

#: Wraps the number of an inline code span hidden while links are rewritten.
_HIDE = "\ue100"
_HIDDEN = re.compile(_HIDE + r"(\d+)" + _HIDE)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
#: ``[text](destination "title")`` not preceded by ``!`` (an image) or ``\``; the text
#: may hold escaped brackets and images (``[![alt](src)](href)``).
_LINK = re.compile(
    r"(?<![!\\])\[((?:\\.|!\[(?:\\.|[^\]\\])*\]\([^)\s]*\)|[^\[\]\\])*)\]"
    r"\((<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(\s+\"(?:\\.|[^\"\\])*\")?\)"
)


def restyle_links(markdown: str, style: LinkStyle) -> str:
    """Return ``markdown`` with its links written in ``style``."""
    if style == "inline":
        return markdown
    numbers: dict[str, int] = {}
    definitions: list[str] = []

    def replace(match: re.Match[str]) -> str:
        text, target, title = match.group(1), match.group(2), match.group(3) or ""
        if style == "none":
            return text
        key = target + title
        if key not in numbers:
            numbers[key] = len(numbers) + 1
            definitions.append(f"[{numbers[key]}]: {target}{title}")
        return f"[{text}][{numbers[key]}]"

    out: list[str] = []
    fence = ""
    for line in markdown.split("\n"):
        if fence:
            if closes_fence(line, fence):
                fence = ""
            out.append(line)
            continue
        opening = opening_fence(line)
        if opening is not None:
            fence = opening
            out.append(line)
            continue
        out.append(_outside_code(line, replace))
    text = "\n".join(out)
    if definitions:
        text = text.rstrip("\n") + "\n\n" + "\n".join(definitions) + "\n"
    return text


def _outside_code(line: str, replace: Callable[[re.Match[str]], str]) -> str:
    """Apply ``replace`` to the links of ``line``, never inside its inline code spans."""
    spans: list[str] = []

    def hide(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"{_HIDE}{len(spans) - 1}{_HIDE}"

    masked = _LINK.sub(replace, _CODE_SPAN.sub(hide, line)) if "](" in line else line
    if not spans:
        return masked
    return _HIDDEN.sub(lambda match: spans[int(match.group(1))], masked)
