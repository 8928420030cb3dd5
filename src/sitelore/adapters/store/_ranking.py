"""Build page results from ranked sections: one hit per page, one per content, hubs lower.

Both stores hand over their best sections (lower score is better, as BM25). A page
scores as its best section plus a little of its second best; a section that is mostly
link lines (tables of contents, indexes: :func:`sitelore.core.sections.link_line`)
counts for less, unless the query is the page's
title word for word (a keyword query naming it: a chapter's contents page, a table of
acronyms), which counts double; pages with the same content
(same hash, or the same URL once ``index.html`` and the fragment are dropped, or a
canonical URL naming another hit) are shown once, the best ranked. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sitelore.core.models import SearchHit
from sitelore.core.sections import anchor_url

__all__ = [
    "HEADING_JOIN",
    "HUB_LINK_RATIO",
    "Candidate",
    "candidate_from_row",
    "candidate_sizes",
    "enough_pages",
    "hub_weight",
    "page_key",
    "rank_pages",
    "wanted",
]

#: A section with more than this share of its text on link lines counts less...
HUB_LINK_RATIO = 0.5
#: ... down to this much from this share on (a table of contents, an index: 0.9 to 1;
#: prose with a list of a few API names in it: 0.5 to 0.7, lowered a little).
_HUB_FACTOR = 0.25
_FULL_HUB = 0.9
#: A section of the page whose title the query is, word for word, counts this much
#: (and is never lowered as a hub). In eval-search, exact-title queries went from
#: hit@5 0.96 to 0.99 with it (hub contents pages and one-word titles had sunk),
#: questions unchanged.
_TITLE_FACTOR = 2.0
_WORD = re.compile(r"\w+")
#: How much of a page's second-best section adds to its best.
_SECOND_WEIGHT = 0.2
_INDEX_NAMES = ("index.html", "index.htm", "index.php")
#: Both stores keep a heading path as its headings joined by a newline (never in one).
HEADING_JOIN = "\n"
#: The columns of a search row a candidate keeps as they are.
_ROW_FIELDS = ("id", "url", "title", "content_hash", "canonical_url", "anchor", "snippet")
#: What a hit shows of its best section as the section has it.
_HIT_FIELDS = ("id", "url", "title", "snippet", "heading_path", "section", "start", "end")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One matching section and its page, as a store found it."""

    id: str
    url: str
    title: str
    content_hash: str
    canonical_url: str | None
    section: int
    heading_path: tuple[str, ...]
    anchor: str | None
    start: int
    end: int
    snippet: str
    score: float
    link_ratio: float

    @property
    def weighted(self) -> float:
        """The score, lowered in weight for a hub section (scores are negative)."""
        return self.score * hub_weight(self.link_ratio)


def hub_weight(link_ratio: float) -> float:
    """How much a section's score counts, by the share of its text on link lines.

    >>> [round(hub_weight(ratio), 3) for ratio in (0.3, 0.7, 0.95)]
    [1.0, 0.625, 0.25]
    """
    share = (link_ratio - HUB_LINK_RATIO) / (_FULL_HUB - HUB_LINK_RATIO)
    return 1.0 - (1.0 - _HUB_FACTOR) * min(1.0, max(0.0, share))


def candidate_from_row(row: Mapping[str, Any]) -> Candidate:
    """A candidate from a store's search row (the same column names in both stores)."""
    heading = row["heading"]
    return Candidate(
        **{name: row[name] for name in _ROW_FIELDS},
        section=row["ordinal"],
        heading_path=tuple(heading.split(HEADING_JOIN)) if heading else (),
        start=row["start_byte"],
        end=row["end_byte"],
        score=float(row["score"]),
        link_ratio=float(row["link_ratio"]),
    )


def wanted(limit: int) -> bool:
    """Whether a search for ``limit`` pages has anything to do (ValueError if negative)."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit}")
    return limit > 0


def candidate_sizes(limit: int) -> tuple[int, ...]:
    """How many best sections to fetch for ``limit`` pages: first, then if too few pages."""
    first = max(50, limit * 8)
    return (first, first * 4, first * 16)


def enough_pages(found: list[Candidate], asked: int, limit: int) -> bool:
    """Whether ``found`` (``asked`` were asked for) holds ``limit`` pages or all there are."""
    return len(found) < asked or len({candidate.id for candidate in found}) >= limit


def page_key(url: str) -> str:
    """``url`` without fragment, trailing ``index.html`` or case in scheme and host.

    >>> page_key("HTTPS://Docs.test/lib/index.html#x")
    'https://docs.test/lib/'
    """
    base = url.split("#", 1)[0]
    scheme, sep, rest = base.partition("://")
    host, slash, path = rest.partition("/")
    for name in _INDEX_NAMES:
        if path == name or path.endswith("/" + name):
            path = path[: -len(name)]
            break
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}"


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


def rank_pages(candidates: Iterable[Candidate], limit: int, *, query: str = "") -> list[SearchHit]:
    """The best ``limit`` pages among ``candidates``, each shown by its best section.

    ``query`` (what was searched for) lifts the pages whose title it is.
    """
    named = _words(query)

    def weighted(found: Candidate) -> float:
        if named and _words(found.title) == named:
            return found.score * _TITLE_FACTOR
        return found.weighted

    best: dict[str, Candidate] = {}
    scores: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for found in candidates:
        score = weighted(found)
        held = scores.get(found.id)
        if held is None or score < held:
            if held is not None:
                seconds[found.id] = min(seconds.get(found.id, 0.0), held)
            best[found.id] = found
            scores[found.id] = score
        else:
            seconds[found.id] = min(seconds.get(found.id, 0.0), score)
    totals = {key: scores[key] + _SECOND_WEIGHT * seconds.get(key, 0.0) for key in best}
    order = sorted(best, key=lambda key: (totals[key], best[key].url))
    seen: set[str] = set()
    hits: list[SearchHit] = []
    for key in order:
        found = best[key]
        keys = {found.content_hash, page_key(found.url)}
        if found.canonical_url:
            keys.add(page_key(found.canonical_url))
        if keys & seen:
            continue
        seen |= keys
        shown = {name: getattr(found, name) for name in _HIT_FIELDS}
        anchor = anchor_url(found.url, found.anchor)
        hits.append(SearchHit(**shown, score=totals[key], anchor_url=anchor))
        if len(hits) >= limit:
            break
    return hits
