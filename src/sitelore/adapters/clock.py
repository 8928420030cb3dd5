"""The real clock: monotonic seconds, wall-clock UTC time, and an awaitable sleep.

Never blocks the event loop and keeps no state; anything that schedules takes a
``ports.Clock`` so tests can pass ``FakeClock`` instead of this one.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

__all__ = ["SystemClock"]


class SystemClock:
    """``ports.Clock`` on the system clocks."""

    __slots__ = ()

    def monotonic(self) -> float:
        """Seconds on the monotonic clock."""
        return time.monotonic()

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the loop (negative waits return at once)."""
        await asyncio.sleep(max(0.0, seconds))
