"""How URLs look inside the Redis frontier: fingerprints, seen-set buckets, queue items.

Pure: no Redis, no I/O. The Lua scripts parse the same item format
(``<attempt>|<depth>[r<hops>]|<path?query>``); the origin is the queue's key, so it is
stored once per origin rather than once per URL.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

__all__ = ["FrontierItem", "bucket_count", "decode_item", "fingerprint", "split_url"]

_INT63 = (1 << 63) - 1
#: Redis keeps a SET of integers as a compact ``intset`` up to ``set-max-intset-entries``
#: (512 by default); we size buckets for about half that.
_BUCKET_TARGET = 256
#: Expected URLs discovered per page fetched, for sizing the seen-set.
_SEEN_PER_PAGE = 32
_MAX_BUCKETS = 1 << 16


@dataclasses.dataclass(frozen=True, slots=True)
class FrontierItem:
    """One URL to fetch: its normalised form, hops from the seed, tries so far.

    ``hops`` counts the redirects that led here (0 for a link or the seed): a
    redirect's target is queued as its own item, so every request is spaced by the
    frontier, and its links are followed only when it is in scope.
    """

    url: str
    depth: int
    attempt: int = 0
    hops: int = 0

    def encode(self) -> tuple[str, str]:
        """``(origin, item)`` as stored: the queue key part and the list entry."""
        host, rest = split_url(self.url)
        flag = f"r{self.hops}" if self.hops else ""
        return host, f"{self.attempt}|{self.depth}{flag}|{rest}"


def decode_item(host: str, item: str) -> FrontierItem:
    """Rebuild the item stored as ``item`` in a queue of origin ``host``."""
    attempt, depth_flag, rest = item.split("|", 2)
    depth, _, hops = depth_flag.partition("r")
    return FrontierItem(host + rest, int(depth), int(attempt), int(hops or 0))


def split_url(url: str) -> tuple[str, str]:
    """Split a normalised URL into its origin and the rest (path and query).

    >>> split_url("https://docs.example.com:8443/a/b?x=1")
    ('https://docs.example.com:8443', '/a/b?x=1')
    """
    start = url.index("://") + 3
    cut = url.find("/", start)
    if cut < 0:
        return url, "/"
    return url[:cut], url[cut:]


def fingerprint(url: str, buckets: int) -> tuple[int, int]:
    """``(fingerprint, bucket)`` of a normalised URL: 63 bits of BLAKE2b, and a bucket.

    The fingerprint fits Redis's int64 intset; the bucket comes from other bits, so
    buckets fill evenly. About n^2 / 2^64 collisions are expected among n URLs.
    """
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=12).digest()
    value = int.from_bytes(digest[:8], "big") & _INT63
    return value, int.from_bytes(digest[8:], "big") % buckets


def bucket_count(max_pages: int) -> int:
    """Seen-set buckets for a crawl of ``max_pages``: a power of two, ~256 URLs each."""
    wanted = max(1, math.ceil(max_pages * _SEEN_PER_PAGE / _BUCKET_TARGET))
    return min(_MAX_BUCKETS, 1 << (wanted - 1).bit_length())
