"""Cut a search snippet as SQLite's FTS5 ``snippet()`` does: the best 16 words, matches in ``**``.

The PostgreSQL store cannot leave this to ``ts_headline``: PostgreSQL re-parses the
Markdown without sitelore's splitting and folding (``_pg_text``), so a word found as
``cafe`` in ``café`` or as ``txt`` in ``robots.txt`` would be neither shown nor marked.
Instead the store works out which written words match the query (their folded forms)
and this module picks and marks the window, porting ``fts5SnippetFunction`` (SQLite's
``fts5_aux.c``) so both stores show the same snippet for the same page:

* A query is phrases (``robots.txt`` is the phrase ``robots txt``); an *instance* is a
  run of words matching every word of one phrase in turn.
* Each instance scores the 16-word window it starts: 1000 per distinct phrase in it,
  1 per repeat; the window is then centred on the instances it holds. A window that
  starts at the sentence holding the instance (after ``.`` or ``:`` and a space) gets
  100 more (120 at the very start). The best score wins; ties go to the first, and
  the title is tried before the body.
* Instances are marked ``**...**``; overlapping ones become one mark; ``…`` stands
  for cut text at either end.

Bounds that FTS5 lacks, so that a long page costs little and a snippet stays short:
a long body is read in :func:`chunks` of at most ``CHUNK_CHARS`` and the window is
chosen in the first chunk that holds a match (FTS5 looks at the whole text); only the
first ``MAX_INSTANCES`` instances of a chunk are scored; a gap or unmarked word longer
than ``MAX_PIECE_CHARS`` is shortened with ``…``. With no instance at all (the match
lies past what the store read), the snippet is the last column's first words.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence, Set
from typing import NamedTuple

from sitelore.adapters.store._pg_text import Words, split_words

__all__ = [
    "CHUNK_CHARS",
    "ELLIPSIS",
    "MARK",
    "MAX_INSTANCES",
    "MAX_PIECE_CHARS",
    "SNIPPET_WORDS",
    "Column",
    "Phrase",
    "chunks",
    "has_match",
    "snippet",
]

#: Words in a snippet (SQLite's store asks FTS5 for 16).
SNIPPET_WORDS = 16
#: Put before and after a match.
MARK = "**"
#: Stands for text left out.
ELLIPSIS = "…"
#: A long body is read in pieces of about this many characters.
CHUNK_CHARS = 10_000
#: Only this many matches per column are scored when choosing the window.
MAX_INSTANCES = 1000
#: Gaps and unmarked words longer than this are shortened.
MAX_PIECE_CHARS = 80

#: For each word of a query phrase, the folded words that match it.
Phrase = Sequence[Set[str]]

# FTS5 starts a sentence at a word after "." or ":" and at least one blank.
_SENTENCE_END = re.compile(r"[.:][ \t\n\r]+\Z")


class Column(NamedTuple):
    """Words of a column, or of a piece of one: ``head`` if it starts the column's text,
    ``whole`` if nothing follows it."""

    words: Words
    whole: bool = True
    head: bool = True

    @property
    def size(self) -> int:
        """How many characters of the text the piece covers."""
        return sum(map(len, self.words.tokens)) + sum(map(len, self.words.gaps))


class _Instance(NamedTuple):
    start: int
    phrase: int
    size: int


def chunks(text: str, *, head: bool = True, more: bool = False) -> Iterator[Column]:
    """``text`` in pieces of at most ``CHUNK_CHARS``, cut between words.

    ``head``: the text starts its column; ``more``: the column goes on after it. A
    piece's last word may run on into the next piece, so it starts the next one.
    """
    offset = 0
    while True:
        piece = text[offset : offset + CHUNK_CHARS]
        last = offset + len(piece) >= len(text)
        words = split_words(piece)
        step = len(piece)
        if not last and words.tokens:
            rest = len(words.tokens[-1]) + len(words.gaps[-1])
            if rest < step:  # else one word fills the piece: too long to match anyway
                step -= rest
                words = Words(words.tokens[:-1], words.folded[:-1], words.gaps[:-1])
        yield Column(words, whole=last and not more, head=head and offset == 0)
        if last:
            return
        offset += step


def has_match(col: Column, phrases: Sequence[Phrase]) -> bool:
    """Whether ``col`` holds an instance of any of ``phrases``."""
    return bool(_instances(col.words.folded, phrases, limit=1))


def snippet(columns: Sequence[Column], phrases: Sequence[Phrase]) -> str:
    """The best window of ``SNIPPET_WORDS`` words of ``columns``, matches of ``phrases`` marked."""
    if not columns:
        return ""
    best_score, best_column, best_start = 0, len(columns) - 1, 0
    found: list[list[_Instance]] = []
    for index, col in enumerate(columns):
        instances = _instances(col.words.folded, phrases)
        found.append(instances)
        score, start = _best_window(col, instances)
        if score > best_score:
            best_score, best_column, best_start = score, index, start
    return _highlight(columns[best_column], found[best_column], best_start)


def _instances(
    folded: Sequence[str], phrases: Sequence[Phrase], limit: int = MAX_INSTANCES
) -> list[_Instance]:
    """The first ``limit`` runs of words matching a phrase, by position then phrase (FTS5's)."""
    openers: dict[str, list[int]] = {}
    for number, phrase in enumerate(phrases):
        if phrase:
            for word in phrase[0]:
                openers.setdefault(word, []).append(number)
    count = len(folded)
    found: list[_Instance] = []
    for position in [i for i, word in enumerate(folded) if word in openers]:
        for number in openers[folded[position]]:
            phrase = phrases[number]
            size = len(phrase)
            if size == 1 or (
                position + size <= count
                and all(folded[position + k] in phrase[k] for k in range(1, size))
            ):
                found.append(_Instance(position, number, size))
        if len(found) >= limit:
            return found[:limit]
    return found


def _best_window(col: Column, instances: Sequence[_Instance]) -> tuple[int, int]:
    """``(score, first word)`` of the best window of one column, as ``fts5SnippetFunction``."""
    count = len(col.words.tokens)
    starts = [instance.start for instance in instances]
    ends = [instance.start + instance.size for instance in instances]
    numbers = [instance.phrase for instance in instances]
    sentences = _sentence_starts(col) if instances and count > SNIPPET_WORDS else []
    sentence_scores: dict[int, int] = {}
    best_score, best_start = 0, 0
    for position in dict.fromkeys(starts):  # instances sharing a start score alike
        low = bisect.bisect_left(starts, position)
        high = bisect.bisect_left(starts, position + SNIPPET_WORDS)
        score = _score(numbers[low:high])
        if score > best_score:
            # Centre the window on the instances in it (C division truncates).
            first, last = starts[low], ends[high - 1]
            spare = SNIPPET_WORDS - (last - first)
            start = first - (spare // 2 if spare >= 0 else -(-spare // 2))
            best_score, best_start = score, max(min(start, count - SNIPPET_WORDS), 0)
        index = bisect.bisect_right(sentences, position) - 1
        if index >= 0:
            sentence = sentences[index]
            if sentence < position:
                if sentence not in sentence_scores:
                    low = bisect.bisect_left(starts, sentence)
                    high = bisect.bisect_left(starts, sentence + SNIPPET_WORDS)
                    bonus = 120 if sentence == 0 else 100
                    sentence_scores[sentence] = _score(numbers[low:high]) + bonus
                if sentence_scores[sentence] > best_score:
                    best_score, best_start = sentence_scores[sentence], sentence
    return best_score, best_start


def _score(numbers: Sequence[int]) -> int:
    """FTS5's window score: 1000 for each phrase's first instance, 1 for each repeat."""
    distinct = len(set(numbers))
    return 1000 * distinct + len(numbers) - distinct


def _sentence_starts(col: Column) -> list[int]:
    """The text's first word and every word after ``.`` or ``:`` and blanks (FTS5's rule)."""
    gaps = col.words.gaps
    return [0] * col.head + [
        i
        for i in range(1, len(col.words.tokens))
        if ("." in gaps[i] or ":" in gaps[i]) and _SENTENCE_END.search(gaps[i])
    ]


def _coalesced(instances: Sequence[_Instance]) -> list[tuple[int, int]]:
    """``(first, last)`` words of each mark: overlapping instances share one."""
    marks: list[tuple[int, int]] = []
    for instance in instances:
        last = instance.start + instance.size - 1
        if marks and instance.start <= marks[-1][1]:
            marks[-1] = (marks[-1][0], max(marks[-1][1], last))
        else:
            marks.append((instance.start, last))
    return marks


def _highlight(col: Column, instances: Sequence[_Instance], start: int) -> str:
    """Words ``start`` to ``start + SNIPPET_WORDS - 1`` with their gaps, matches marked."""
    words = col.words
    count = len(words.tokens)
    if count == 0:
        return _gap(words.gaps[0]) if col.whole and col.head else ELLIPSIS
    end = start + SNIPPET_WORDS - 1
    marks = [mark for mark in _coalesced(instances) if mark[0] >= start]
    out = [ELLIPSIS if start > 0 or not col.head else _gap(words.gaps[0])]
    k = 0
    for i in range(start, min(end, count - 1) + 1):
        if i > start:
            out.append(_gap(words.gaps[i]))
        mark = marks[k] if k < len(marks) else (-1, -1)
        if i == mark[0]:
            out.append(MARK)
        inside = mark[0] <= i <= mark[1]
        out.append(words.tokens[i] if inside else _word(words.tokens[i]))
        if i == mark[1]:
            out.append(MARK)
            k += 1
        elif i == end and inside:
            out.append(MARK)
    out.append(_gap(words.gaps[count]) if end >= count - 1 and col.whole else ELLIPSIS)
    return "".join(out)


def _gap(text: str) -> str:
    if len(text) <= MAX_PIECE_CHARS:
        return text
    half = MAX_PIECE_CHARS // 2
    return text[:half] + ELLIPSIS + text[-half:]


def _word(text: str) -> str:
    return text if len(text) <= MAX_PIECE_CHARS else text[:MAX_PIECE_CHARS] + ELLIPSIS
