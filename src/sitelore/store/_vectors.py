"""Pack section vectors for storage and rank stored ones against a query vector.

Both stores keep a vector as float32 bytes (a BLOB in SQLite, ``bytea`` in PostgreSQL)
beside the model's name; ranking is cosine similarity, which for the unit-length
vectors of :mod:`sitelore.embedding` is a dot product. numpy (the ``semantic`` extra)
is imported only to rank, so a store without the extra still opens. Pure: no I/O.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from sitelore.store._ranking import HEADING_JOIN

__all__ = ["TEXT_CHARS", "nearest", "section_text", "to_bytes"]

#: How much of a section's text is handed to the model (it reads the first words only).
TEXT_CHARS = 2000


def section_text(title: str, heading: str, body: str) -> str:
    """What the model reads for a section: page title, heading path, start of its text."""
    parts = [title, *heading.split(HEADING_JOIN), body[:TEXT_CHARS]]
    return "\n".join(part for part in parts if part)


def to_bytes(vector: Sequence[float] | Any) -> bytes:
    """``vector`` as little-endian float32 bytes (the layout sqlite-vec reads)."""
    packed = array.array("f", (float(x) for x in vector))
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def nearest(
    query: Sequence[float] | Any, rows: Iterable[tuple[int, bytes]], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` keys of ``rows`` (key, packed vector) most similar to ``query``.

    Best first, as (key, cosine distance = 1 - similarity); ties go to the lower key.
    Vectors of another length than the query's are skipped.
    """
    import numpy as np

    wanted = np.asarray(query, dtype=np.float32)
    size = wanted.size * 4
    keys: list[int] = []
    packed: list[bytes] = []
    for key, data in rows:
        if len(data) == size:
            keys.append(key)
            packed.append(data)
    if not keys or limit <= 0:
        return []
    matrix = np.frombuffer(b"".join(packed), dtype="<f4").reshape(len(keys), wanted.size)
    distances = 1.0 - matrix @ wanted
    order = np.lexsort((np.asarray(keys), distances))[:limit]
    return [(keys[i], float(distances[i])) for i in order]
