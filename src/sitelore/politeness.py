"""When may each origin be hit next: delay, Crawl-delay and Retry-After, as pure arithmetic.

Never sleeps and never reads a clock: callers pass ``now`` (monotonic seconds, or a
wall-clock datetime for HTTP dates) and act on the values returned.
"""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime

__all__ = ["parse_retry_after"]


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Return the seconds a Retry-After header asks to wait, or None when unusable.

    Accepts delta-seconds (``"120"``) and HTTP dates (``"Wed, 21 Oct 2015 07:28:00 GMT"``);
    a date in the past means 0. Negative, non-numeric or garbled values give None.

    >>> parse_retry_after("5", datetime(2026, 1, 1, tzinfo=UTC))
    5.0
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
