"""When may each origin be hit next: delay, Crawl-delay and Retry-After, as pure arithmetic.

Never sleeps and never reads a clock: callers pass ``now`` (monotonic seconds, or a
wall-clock datetime for HTTP dates) and act on the values returned.

One :class:`Politeness` (per process: ``crawl.memory.Origins``) keeps, for each
origin, the earliest monotonic time its next request may start. For one request::

    wait = politeness.wait_for(origin, now)            # 0.0 for an origin never hit
    wait = clamp_to_deadline(wait, now, deadline)      # None: give up, the deadline wins
    ... sleep(wait) ...
    politeness.record_request(origin, clock.now())     # spacing counts from the start
    ... on 429/503: politeness.push_back(origin, now, parse_retry_after(header, utcnow))

Throttling that cannot be honoured ends the origin instead of being shortened:
:func:`retry_after_refusal` (a Retry-After over the cap or reaching the crawl's
deadline) and :func:`crawl_delay_refusal` (a Crawl-delay over the cap: one request,
then no more) say why; the crawl's frontier keeps its throttled origins.
"""

from __future__ import annotations

import email.utils
import math
import re
from datetime import UTC, datetime

__all__ = [
    "Politeness",
    "clamp_to_deadline",
    "crawl_delay_refusal",
    "parse_retry_after",
    "retry_after_refusal",
]


class Politeness:
    """Per-origin request spacing: delay, Crawl-delay and Retry-After.

    * Spacing of an origin = max(``delay``, the asking crawl's delay, its Crawl-delay
      clamped to ``max_crawl_delay``), counted from each recorded request.
    * No wait before the first request to an origin.
    * A Retry-After pushes that origin's next request out; it never brings a request
      forward. Whether a wait can be made at all is the caller's decision
      (:func:`retry_after_refusal`, :func:`crawl_delay_refusal`).
    * Origins are independent of each other.

    >>> polite = Politeness(1.0)
    >>> polite.wait_for("https://a.example", now=100.0)
    0.0
    >>> polite.record_request("https://a.example", now=100.0)
    >>> polite.wait_for("https://a.example", now=100.25)
    0.75
    """

    __slots__ = ("_crawl_delays", "_delay", "_max_crawl_delay", "_next_at")

    def __init__(self, delay: float, *, max_crawl_delay: float = 10.0) -> None:
        self._delay = _non_negative(delay)
        self._max_crawl_delay = _non_negative(max_crawl_delay)
        self._crawl_delays: dict[str, float] = {}
        self._next_at: dict[str, float] = {}

    def set_crawl_delay(self, origin: str, ms: int | None) -> None:
        """Set the origin's robots.txt Crawl-delay in milliseconds (None: it has none)."""
        if ms is None:
            self._crawl_delays.pop(origin, None)
            return
        self._crawl_delays[origin] = min(_non_negative(ms / 1000), self._max_crawl_delay)

    def spacing(self, origin: str, delay: float = 0.0) -> float:
        """Return the minimum seconds between the starts of two requests to ``origin``.

        ``delay``: the asking crawl's own delay, when crawls with different delays
        share this table (each origin is spaced by the largest).
        """
        return max(self._delay, delay, self._crawl_delays.get(origin, 0.0))

    def ready_at(self, origin: str) -> float:
        """Return the monotonic time the next request to ``origin`` may start.

        ``-inf`` for an origin not requested yet (no wait before the first request).
        """
        return self._next_at.get(origin, -math.inf)

    def wait_for(self, origin: str, now: float) -> float:
        """Return the seconds to wait at ``now`` before requesting ``origin`` (>= 0)."""
        return max(0.0, self.ready_at(origin) - now)

    def record_request(self, origin: str, now: float, *, delay: float = 0.0) -> None:
        """Record that a request to ``origin`` starts (or ends) at ``now``."""
        self._push(origin, now + self.spacing(origin, delay))

    def push_back(self, origin: str, now: float, seconds: float | None) -> None:
        """Honour a wait of ``seconds`` asked at ``now`` (None, NaN, <= 0, inf: no-op)."""
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            return
        self._push(origin, now + seconds)

    def _push(self, origin: str, when: float) -> None:
        if when > self._next_at.get(origin, -math.inf):
            self._next_at[origin] = when


def clamp_to_deadline(wait: float, now: float, deadline: float) -> float | None:
    """Return ``wait`` if the request can still start before ``deadline``, else None.

    None means the wait would reach or pass the deadline (or it has passed already):
    the caller must not sleep, and stops the crawl. Negative waits count as 0.

    >>> clamp_to_deadline(2.0, now=10.0, deadline=15.0)
    2.0
    >>> clamp_to_deadline(6.0, now=10.0, deadline=15.0) is None
    True
    """
    wait = max(0.0, wait)
    if now + wait >= deadline:
        return None
    return wait


#: Why an origin asking for a Crawl-delay over the cap gets no request after its first.
_CRAWL_DELAY_OVER_CAP = "Crawl-delay over the crawl's cap"


def retry_after_refusal(seconds: float | None, *, left: float, cap: float) -> str | None:
    """Why a wait of ``seconds`` cannot be honoured, or None when it can.

    It cannot when it is longer than ``cap`` or reaches the crawl's end (``left``
    seconds away): the origin is then throttled rather than asked again sooner.

    >>> retry_after_refusal(30.0, left=600.0, cap=60.0) is None
    True
    >>> retry_after_refusal(86400.0, left=600.0, cap=60.0)
    'Retry-After 86400s is longer than the crawl may wait'
    """
    if seconds is None or math.isnan(seconds) or seconds <= 0:
        return None
    if seconds > cap or seconds >= left:
        asked = f"{seconds:.0f}s" if math.isfinite(seconds) else "beyond counting"
        return f"Retry-After {asked} is longer than the crawl may wait"
    return None


def crawl_delay_refusal(ms: int | None, *, cap: float) -> str | None:
    """Why a Crawl-delay of ``ms`` (as the site asked) cannot be kept under ``cap`` seconds."""
    return _CRAWL_DELAY_OVER_CAP if ms is not None and ms / 1000 > cap else None


#: Retry-After delta-seconds: ASCII only (``str.isdigit`` and ``float`` take other digits).
_DELAY_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _non_negative(value: float) -> float:
    return value if math.isfinite(value) and value > 0 else 0.0


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Return the seconds a Retry-After header asks to wait, or None when unusable.

    Accepts delta-seconds (``"120"``; ASCII digits, a fraction and an exponent
    tolerated) and HTTP dates (``"Wed, 21 Oct 2015 07:28:00 GMT"``); a date in the
    past means 0. A number too large for a float is ``inf``: a wait no crawl can
    give. Negative, non-numeric or garbled values give None.

    >>> parse_retry_after("5", datetime(2026, 1, 1, tzinfo=UTC))
    5.0
    >>> parse_retry_after("1e309", datetime(2026, 1, 1, tzinfo=UTC))
    inf
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if _DELAY_SECONDS.fullmatch(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
