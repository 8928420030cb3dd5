"""Turn text and queries into the word lists PostgreSQL indexes, matching SQLite's FTS5 rules.

The SQLite store tokenizes with ``porter unicode61 remove_diacritics 2``: words are runs
of letters and digits, case and diacritics are folded, and every word is Porter-stemmed.
PostgreSQL's default parser splits text differently (``robots.txt`` is one *file* token,
``e-mail`` a hyphenated word) and knows nothing of diacritics, so the PostgreSQL store
does the splitting and folding here, in Python, and hands PostgreSQL plain space-separated
words; its ``sitelore_text`` configuration then only stems them (Porter, no stop words).
Both stores therefore find the same documents for the same plain-text query.

Pure: no I/O, no database; the SQL that consumes these strings lives in ``postgres``.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_BODY_CHARS", "MAX_TITLE_CHARS", "MAX_WORD_CHARS", "index_text", "tsquery_text"]

#: Only this many characters of folded body words are indexed. PostgreSQL refuses a
#: tsvector over 1 MB, and a failed INSERT would loop a page through every retry.
MAX_BODY_CHARS = 250_000
#: The same cap for titles.
MAX_TITLE_CHARS = 10_000
#: Longer words are dropped (PostgreSQL skips words over 2047 bytes with a notice).
MAX_WORD_CHARS = 255

# Letters and digits of any script: the token characters of FTS5's unicode61.
_WORD = re.compile(r"[^\W_]+")


def _fold(text: str) -> str:
    """Lower-case and strip diacritics (``Việt`` -> ``viet``), as ``remove_diacritics 2``."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


def _words(text: str) -> list[str]:
    return [word for word in _WORD.findall(_fold(text)) if len(word) <= MAX_WORD_CHARS]


def index_text(text: str, max_chars: int = MAX_BODY_CHARS) -> str:
    """The folded words of ``text``, space-separated, cut to at most ``max_chars``.

    >>> index_text("Robots.txt: the Café's RULES")
    'robots txt the cafe s rules'
    """
    out: list[str] = []
    size = 0
    for word in _words(text.replace("\0", " ")):
        size += len(word) + 1
        if size > max_chars + 1:
            break
        out.append(word)
    return " ".join(out)


def tsquery_text(query: str) -> str:
    """A ``to_tsquery`` expression that ANDs every word of ``query``; "" when it has none.

    A whitespace-separated word that splits into several tokens (``robots.txt``) must
    match as a phrase, as FTS5 does with a quoted string. Operators and quotes in the
    query are never syntax: only folded letters and digits reach PostgreSQL, each
    single-quoted.

    >>> tsquery_text('robots.txt NOT "x"')
    "('robots' <-> 'txt') & ('not') & ('x')"
    """
    text = query.replace("\0", " ").encode("utf-8", "replace").decode("utf-8")
    parts: list[str] = []
    for chunk in text.split():
        words = _words(chunk)
        if words:
            parts.append("(" + " <-> ".join(f"'{word}'" for word in words) + ")")
    return " & ".join(parts)
