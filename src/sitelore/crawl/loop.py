"""The one crawl loop: each slot leases a URL, runs the page pipeline, reports the result.

Local crawls and scale-out workers both run it, over their own ``Frontier`` adapter
(``crawl.memory`` or ``worker``). A slot stops when the frontier has nothing more for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sitelore.crawl.port import Frontier, LeaseT, PageResult

__all__ = ["run_slots"]


async def run_slots(
    frontier: Frontier[LeaseT], process: Callable[[LeaseT], Awaitable[PageResult]], slots: int
) -> None:
    """Run ``slots`` concurrent slots until the frontier ends them all.

    An exception from ``process`` (a bug outside page handling: the pipeline turns
    every page's failure into a result) ends the crawl through the task group.
    """

    async def slot() -> None:
        while (lease := await frontier.lease()) is not None:
            result = await process(lease)
            await frontier.complete(lease, result)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, slots)):
            group.create_task(slot())
