"""Length-prefixed pickle frames between the pool and its workers (one pipe each way).

A frame is a 4-byte big-endian length and that many bytes of pickle. Only sitelore
pickles go through it: requests the crawl made and replies a worker built.
"""

from __future__ import annotations

import pickle
from typing import IO, Any

__all__ = ["DEFAULT_FACTORY", "HEADER", "Reply", "frame", "read_frame", "unpack"]

#: Bytes of the length prefix.
HEADER = 4
#: What builds a worker's converter: ``module:callable`` returning
#: ``(body, content_type, url, charset) -> Document``.
DEFAULT_FACTORY = "sitelore.core.convert:DocumentConverter"
#: A worker's answer: (status, payload, retire). Status "ok" (payload: the Document),
#: "unsupported", "conversion" or "failed" (payload: the message); ``retire`` asks
#: the pool to replace the worker; the first frame a worker sends is ("ready", pid).
Reply = tuple[str, Any, bool]


def frame(value: Any) -> bytes:
    """``value`` pickled and prefixed with its length."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(HEADER, "big") + data


def unpack(data: bytes) -> Any:
    """The value of one frame's payload."""
    return pickle.loads(data)  # noqa: S301 - frames come from sitelore's own processes


def read_frame(stream: IO[bytes]) -> Any | None:
    """Read one frame from a blocking stream; None at end of input."""
    head = stream.read(HEADER)
    if len(head) < HEADER:
        return None
    size = int.from_bytes(head, "big")
    data = stream.read(size)
    if len(data) < size:
        return None
    return unpack(data)
