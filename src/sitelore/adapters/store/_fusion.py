"""Fuse lexical and vector rankings of sections by reciprocal rank fusion. Pure: no I/O.

A section scores ``-sum(1 / (K + rank))`` over the rankings that hold it (rank from 1;
negative so that lower is better, as BM25 scores are, and :func:`rank_pages` can build
pages from the result). Only ranks count, never raw scores, so BM25 and cosine
similarity need no common scale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sitelore.adapters.store._ranking import Candidate

__all__ = ["RRF_K", "fuse"]

#: The usual constant of reciprocal rank fusion: damps the weight of the very top ranks.
RRF_K = 60


def fuse(rankings: Sequence[Sequence[Candidate]], *, k: int = RRF_K) -> list[Candidate]:
    """One list of the sections of every ranking, best fused score first.

    A section is known by its page id and ordinal; the first ranking holding it gives
    its snippet (the lexical one marks matched words). Ties keep the order seen.
    """
    scores: dict[tuple[str, int], float] = {}
    firsts: dict[tuple[str, int], Candidate] = {}
    for ranking in rankings:
        for rank, found in enumerate(ranking, 1):
            key = (found.id, found.section)
            scores[key] = scores.get(key, 0.0) - 1.0 / (k + rank)
            firsts.setdefault(key, found)
    order = sorted(scores, key=lambda key: scores[key])
    return [dataclasses.replace(firsts[key], score=scores[key]) for key in order]
