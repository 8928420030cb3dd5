"""Tell, line by line, where a Markdown code fence opens and where it closes.

Fences may sit in block quotes and list items, so leading spaces and ``>`` are
skipped (or the ``indent`` a caller names); a fence closes on a line of at least as
many of its own characters.
"""

from __future__ import annotations

__all__ = ["closes_fence", "opening_fence"]


def opening_fence(line: str, indent: str = " >") -> str | None:
    """The fence ``line`` opens (its run of backticks or tildes) after ``indent``, or None."""
    stripped = line.lstrip(indent)
    if not stripped.startswith(("```", "~~~")):
        return None
    return stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]  # the whole run


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code block opened by ``fence``."""
    body = line.lstrip(" >").strip()
    return body.startswith(fence) and not body.strip(fence[0])
