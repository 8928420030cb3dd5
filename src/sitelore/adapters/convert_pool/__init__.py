"""Convert pages in a bounded pool of worker processes, each page under a time cap.

The adapter behind ``ports.Converter`` for real crawls: parsing, main-content
selection, Markdown and link extraction run in child processes, so the event loop
keeps fetching while pages convert, and a crawl uses every core. A page that runs
over its cap, or whose worker dies (a crash, a memory bound hit), is that page's
``conversion-failed`` error; the worker is killed and a fresh one takes its place.

::

    async with ProcessConverter(workers=2, page_timeout=10.0) as pool:
        document = await pool.convert(body, "text/html", url, None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["ProcessConverter", "default_workers"]

if TYPE_CHECKING:
    from sitelore.adapters.convert_pool._pool import ProcessConverter, default_workers


def __getattr__(name: str) -> Any:
    """The pool's names, imported on first use (PEP 562): a worker process, which imports
    this package for its frames, never loads the pool (nor asyncio)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from sitelore.adapters.convert_pool import _pool

    return getattr(_pool, name)
