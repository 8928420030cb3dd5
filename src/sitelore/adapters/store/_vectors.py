"""Pack section vectors for storage and rank stored ones against a query vector.

Both stores keep a vector as float32 bytes (a BLOB in SQLite, ``bytea`` in PostgreSQL)
beside the model's name; ranking is cosine similarity, which for the unit-length
vectors of :mod:`sitelore.adapters.embedding` is a dot product. :class:`VectorMatrix` stacks a
model's vectors into one float32 matrix, so ranking is one matrix-vector product (and
a store can keep the matrix between queries). numpy (the ``semantic`` extra) is
imported only to rank, so a store without the extra still opens. Pure: no I/O.
"""

from __future__ import annotations

import array
import dataclasses
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from sitelore.adapters.store._ranking import HEADING_JOIN

__all__ = ["TEXT_CHARS", "VectorMatrix", "nearest", "section_text", "to_bytes"]

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


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class VectorMatrix:
    """Vectors of one length as rows of one float32 matrix, and the key of each row."""

    keys: Any  # int64, one per row
    matrix: Any  # float32, (rows, dims)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, bytes]], dims: int) -> VectorMatrix:
        """The rows (key, packed vector) of ``dims`` floats; vectors of another length skipped."""
        import numpy as np

        size = dims * 4
        keys: list[int] = []
        packed: list[bytes] = []
        for key, data in rows:
            if len(data) == size:
                keys.append(key)
                packed.append(data)
        matrix = np.frombuffer(b"".join(packed), dtype="<f4").reshape(len(keys), dims)
        return cls(np.asarray(keys, dtype=np.int64), matrix)

    @property
    def dims(self) -> int:
        """The length of each vector."""
        return int(self.matrix.shape[1])

    def nearest(self, query: Sequence[float] | Any, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` keys nearest to ``query`` as (key, cosine distance), best first.

        Ties go to the lower key. Only the rows that can be among the ``limit`` best
        (distance at most the ``limit``-th smallest) are sorted.
        """
        import numpy as np

        wanted = np.asarray(query, dtype=np.float32)
        count = len(self.keys)
        if not count or limit <= 0 or wanted.size != self.dims:
            return []
        # einsum, not ``@``: BLAS spreads a matrix-vector product over its thread pool,
        # whose threads then spin-wait for more work. At 100k rows on a busy two-core
        # machine that made 5 ms of wall time cost 40 ms of CPU (numpy's own loop: 11).
        distances = 1.0 - np.einsum("ij,j->i", self.matrix, wanted)
        if count > limit:
            cut = np.partition(distances, limit - 1)[limit - 1]
            rows = np.flatnonzero(distances <= cut)
        else:
            rows = np.arange(count)
        order = rows[np.lexsort((self.keys[rows], distances[rows]))][:limit]
        return [(int(self.keys[i]), float(distances[i])) for i in order]


def nearest(
    query: Sequence[float] | Any, rows: Iterable[tuple[int, bytes]], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` keys of ``rows`` (key, packed vector) most similar to ``query``.

    Best first, as (key, cosine distance = 1 - similarity); ties go to the lower key.
    Vectors of another length than the query's are skipped.
    """
    dims = len(query)
    return VectorMatrix.from_rows(rows, dims).nearest(query, limit)
