"""Tell, line by line, where a Markdown code fence opens and where it closes.

Fences may sit in block quotes and list items, so leading spaces and ``>`` are
skipped; a fence closes on a line of at least as many of its own characters.
"""

from __future__ import annotations

import re

__all__ = ["closes_fence", "opening_fence"]

_OPENING = re.compile(r"(`{3,}|~{3,})")


def opening_fence(line: str) -> str | None:
    """The fence ``line`` opens (its run of backticks or tildes), or None."""
    stripped = line.lstrip(" >")
    if not stripped.startswith(("```", "~~~")):  # most lines: no regex needed
        return None
    match = _OPENING.match(stripped)
    return match.group(1) if match is not None else None


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code block opened by ``fence``."""
    body = line.lstrip(" >").strip()
    return body.startswith(fence) and not body.strip(fence[0])
