"""Turn text and queries into the word lists PostgreSQL indexes, matching SQLite's FTS5 rules.

The SQLite store tokenizes with ``porter unicode61 remove_diacritics 2``: words are runs
of letters and digits, case and diacritics are folded, and every word is Porter-stemmed.
PostgreSQL's default parser splits text differently (``robots.txt`` is one *file* token,
``e-mail`` a hyphenated word) and knows nothing of diacritics, so the PostgreSQL store
does the splitting and folding here, in Python, and hands PostgreSQL plain space-separated
words; its ``sitelore_text`` configuration then only stems them (Porter, no stop words).
Both stores therefore find the same documents for the same plain-text query.

:func:`split_words` cuts a text into the same words, keeping each one's spelling and
the text between, so a snippet can show and mark the words exactly as they are written.

Pure: no I/O, no database; the SQL that consumes these strings lives in ``postgres``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_WORD_CHARS",
    "Words",
    "index_text",
    "query_phrases",
    "split_words",
    "stem_prefix",
]

#: Only this many characters of folded body words are indexed. PostgreSQL refuses a
#: tsvector over 1 MB, and a failed INSERT would loop a page through every retry.
MAX_BODY_CHARS = 250_000
#: The same cap for titles.
MAX_TITLE_CHARS = 10_000
#: Longer words are dropped (PostgreSQL skips words over 2047 bytes with a notice).
MAX_WORD_CHARS = 255

# Letters and digits of any script: the token characters of FTS5's unicode61.
_WORD = re.compile(r"[^\W_]+")
_SPLIT = re.compile(r"([^\W_]+)")


def _marks(text: str) -> str:
    """The distinct nonspacing marks (``Mn``: combining accents) in ``text``."""
    if text.isascii():
        return ""
    return "".join(sorted(ch for ch in set(text) if unicodedata.category(ch) == "Mn"))


@functools.lru_cache(maxsize=256)
def _any_of(marks: str) -> re.Pattern[str]:
    return re.compile(f"[{re.escape(marks)}]")


def _fold(text: str) -> str:
    """Lower-case and strip diacritics (``Việt`` -> ``viet``), as ``remove_diacritics 2``."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    marks = _marks(decomposed)
    return _any_of(marks).sub("", decomposed) if marks else decomposed


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


def query_phrases(query: str) -> list[list[str]]:
    """The folded words of ``query``, one list per whitespace-separated chunk that has any.

    A chunk that splits into several words (``robots.txt``) is a phrase: its words must
    follow each other, as in an FTS5 quoted string.

    >>> query_phrases('robots.txt NOT "x"')
    [['robots', 'txt'], ['not'], ['x']]
    """
    text = query.replace("\0", " ").encode("utf-8", "replace").decode("utf-8")
    return [words for chunk in text.split() if (words := _words(chunk))]


class Words(NamedTuple):
    """A text cut into words: ``gaps[i]`` comes before ``tokens[i]``, ``gaps[-1]`` ends it.

    Interleaving gaps and tokens gives the text back. ``folded[i]`` is ``tokens[i]`` as
    the index holds it (folded, not stemmed).
    """

    tokens: list[str]
    folded: list[str]
    gaps: list[str]


@functools.lru_cache(maxsize=256)
def _split_pattern(marks: str) -> re.Pattern[str]:
    # A word starts with a letter or digit and runs on through letters, digits and
    # combining marks: folding drops the marks, joining what they separated.
    return re.compile(f"([^\\W_](?:[^\\W_]|[{re.escape(marks)}])*+)")


def split_words(text: str) -> Words:
    """Cut ``text`` into the words :func:`index_text` indexes, spelled as written.

    Unlike the index, words over ``MAX_WORD_CHARS`` are kept.

    >>> words = split_words("Robots.txt, Café!")
    >>> words.tokens, words.folded, words.gaps
    (['Robots', 'txt', 'Café'], ['robots', 'txt', 'cafe'], ['', '.', ', ', '!'])
    """
    marks = _marks(text)
    parts = (_split_pattern(marks) if marks else _SPLIT).split(text)
    tokens = parts[1::2]
    if text.isascii():  # one fold for all words: NUL is no letter, so it keeps them apart
        return Words(tokens, "\0".join(tokens).lower().split("\0") if tokens else [], parts[0::2])
    # Fold the whole text, as index_text does (lower() looks at the neighbours of a
    # Greek sigma). Folding only drops combining marks, which the split pattern keeps
    # inside words, so the words line up, unless a rare letter folds into two words.
    folded = _WORD.findall(_fold(text))
    if len(folded) != len(tokens):
        folded = _fold("\0".join(tokens)).split("\0")
    return Words(tokens, folded, parts[0::2])


def stem_prefix(stem: str) -> str | None:
    """What every word that PostgreSQL stems to ``stem`` starts with; None if not a plain stem.

    Porter only rewrites the end of a word, and of a stem at most the last letter is
    not the word's own (``happy`` -> ``happi``, ``hoping`` -> ``hope``, ``sensibility``
    -> ``sensibl``); numbers are not stemmed at all. (Checked against PostgreSQL on
    190,000 words.) A ``stem`` of several lexemes (PostgreSQL split the word) or of
    none is not a plain stem.

    >>> stem_prefix("happi"), stem_prefix("run"), stem_prefix("x"), stem_prefix("1e9 e")
    ('happ', 'ru', 'x', None)
    """
    if not stem or " " in stem:
        return None
    return stem[: max(1, len(stem) - 1)]
