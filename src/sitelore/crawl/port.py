"""The Frontier port: what the one crawl loop needs from a frontier, and what a page gives back.

A frontier hands out :class:`Lease`s (one URL each, its origin held for this slot) and
takes back a :class:`PageResult` per lease. Two adapters implement it:
``crawl.memory.MemoryFrontier`` (one process: BFS queue, per-origin locks and spacing)
and ``worker.RedisLeases`` (many workers: the Lua frontier in Redis). The page pipeline
(``crawl.page``) and the loop (``crawl.loop``) only see this module's types, so both
modes share one behaviour:

* **Redirect hops** are not followed inside a fetch: a 3xx ends the exchange and its
  target becomes its own item (same depth, ``hops + 1``, ``via`` the URL first asked
  for), spaced, robots-checked and guarded like any request. A hop onto a URL the crawl
  already knows is a ``duplicate``; a hop does not use another page slot.
* **Retries** go through the frontier: a 429/502/503/504, a network failure or a
  timeout comes back as ``RETRY`` with a backoff on its origin, until ``max_attempts``.
* **Retry-After / Crawl-delay** push the origin back; one the crawl cannot wait for
  throttles the origin (its other URLs are skipped as ``throttled``).
* **robots.txt** is fetched under the origin's lease and counts as that origin's
  request: the URL goes back untouched (``REQUEUE``) and waits its turn.
* **Twins** (``core.twins``: a directory URL and its index file with the same text)
  are one document: the first of a twin group to claim a text in the crawl
  (:meth:`Lease.claim`, shared by every slot and worker) keeps it; the other is a
  ``DONE`` page skipped as ``duplicate`` (its links offered as any page's), and its
  page slot comes back.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Protocol, TypeVar

from sitelore.core.models import PageOutcome, SkipReason
from sitelore.crawl.frontier import CrawlItem

__all__ = ["CrawlItem", "Frontier", "Lease", "LeaseT", "PageResult", "Step", "Turn"]


class Step(enum.StrEnum):
    """What became of one leased URL."""

    #: A request was made and the page ended (stored, skipped as noindex, or failed).
    DONE = "done"
    #: A request was made; it redirected to ``PageResult.hop``, queued as its own item.
    HOP = "hop"
    #: A request was made and failed for now: try again after the origin's backoff.
    RETRY = "retry"
    #: robots.txt was fetched instead: the URL goes back untouched and waits its turn.
    REQUEUE = "requeue"
    #: No request was made (``PageResult.skip`` says why): its page slot comes back.
    SKIP = "skip"
    #: The crawl's deadline came first: the URL goes back unfetched and the crawl stops.
    STOP = "stop"


class Turn(enum.Enum):
    """What waiting for an origin's turn gave."""

    GO = "go"  #: the origin is held: request now
    DEADLINE = "deadline"  #: the crawl must end first; nothing is held
    THROTTLED = "throttled"  #: the origin was throttled meanwhile; nothing is held


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PageResult:
    """One leased URL's result, as the page pipeline reports it to the frontier."""

    step: Step
    #: The page's outcome (``DONE``, and a ``SKIP`` that ends a redirect chain).
    outcome: PageOutcome | None = None
    #: Absolute links to offer at ``depth + 1`` (``DONE`` only).
    links: tuple[str, ...] = ()
    #: The redirect target (``HOP``).
    hop: str | None = None
    #: Why no request was made (``SKIP``), or why a page was not stored (``noindex``).
    skip: SkipReason | None = None
    #: The origin's Crawl-delay in milliseconds as robots.txt asked (None: none, unknown).
    crawl_delay_ms: int | None = None
    #: Seconds the origin asked to wait before its next request (Retry-After), or the
    #: backoff of a ``RETRY``.
    backoff: float = 0.0
    #: The origin asked for a wait the crawl cannot make: no more requests to it.
    throttle: str | None = None
    #: A line for the crawl's warnings (a refused robots.txt, a throttled origin).
    warning: str | None = None


class Lease(Protocol):
    """One URL handed to one slot; its origin is this slot's until :meth:`free`."""

    @property
    def item(self) -> CrawlItem:
        """The URL to process."""
        ...

    @property
    def origin(self) -> str:
        """The URL's origin: the key of its spacing, robots.txt and throttle."""
        ...

    def remaining(self) -> float:
        """Seconds of crawl time left."""
        ...

    async def throttled(self) -> str | None:
        """Why no request may go to this URL's origin any more, or None."""
        ...

    async def turn(self) -> Turn:
        """Wait until the origin may be requested now, and hold it (``Turn.GO``).

        Call right before each request of the lease; :meth:`free` after it.
        """
        ...

    async def hold_off(self, seconds: float, throttle: str | None) -> None:
        """While the origin is held: push its next request ``seconds`` out, or throttle it."""
        ...

    async def free(self, *, requested: bool = True) -> None:
        """The exchange is over: the origin may be requested again (after its spacing).

        ``requested=False``: the turn was not used for a request after all.
        """
        ...

    async def claim(self, key: str, url: str) -> str:
        """Claim document ``key`` (``core.twins.claim_key``) for ``url`` in this crawl.

        Returns the URL that holds it: ``url`` when this is the first claim, else the
        first claimer's. Atomic across the crawl's slots (and workers).
        """
        ...


LeaseT = TypeVar("LeaseT", bound=Lease)


class Frontier(Protocol[LeaseT]):
    """Where a crawl slot gets its next URL and reports what became of it."""

    async def lease(self) -> LeaseT | None:
        """The next URL whose origin is free, waiting if need be; None: the slot stops."""
        ...

    async def complete(self, lease: LeaseT, result: PageResult) -> None:
        """Record ``result`` for ``lease``: outcome, links, retries, hops, origin state."""
        ...
