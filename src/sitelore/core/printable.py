"""Text a site controls, made safe to show on one line of a terminal.

An error message or a warning can carry what a server sent: a ``Sitemap:`` line of
robots.txt, a redirect's Location, a parser's complaint about a body. Written raw
to a terminal, an ESC in it is an escape sequence (clear the screen, retitle the
window, OSC 52 clipboard writes) and a line break forges a line. :func:`printable`
writes every control character as a visible ``\\xNN`` escape instead.

>>> printable("http://x/\\x1b[2J")
'http://x/\\\\x1b[2J'
>>> printable("plain text é")
'plain text é'
"""

from __future__ import annotations

import re

__all__ = ["printable"]

#: C0 (line breaks and TAB included), DEL and C1.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str) -> str:
    """``text`` with each control character written as ``\\xNN`` (one line, no escapes)."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(_escape, text)
