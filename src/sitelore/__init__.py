"""sitelore: websites into a local, searchable, replayable Markdown store, politely and safely.

The public library, as ``sitelore.NAME`` (``__all__`` below is the promise; everything
else is internal and may move). Names are imported on first use, so ``import
sitelore`` stays cheap for the CLI's read commands::

    import sitelore

    async with sitelore.Runtime(sitelore.Settings(store="docs.db")) as runtime:
        summary = await runtime.crawl("https://docs.example.com/", sitelore.CrawlOptions())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "ChangeKind": "sitelore.core.models",
    "ChangeReport": "sitelore.core.changes",
    "ConfigError": "sitelore.core.errors",
    "CrawlOptions": "sitelore.core.options",
    "CrawlSummary": "sitelore.core.models",
    "Document": "sitelore.core.models",
    "DocumentConverter": "sitelore.core.convert",
    "Limits": "sitelore.core.options",
    "PageError": "sitelore.core.models",
    "PageOutcome": "sitelore.core.models",
    "Runtime": "sitelore.app.bootstrap",
    "Settings": "sitelore.core.config",
    "SiteloreError": "sitelore.core.errors",
    "SkipReason": "sitelore.core.models",
    "SourceSpec": "sitelore.core.config",
    "UsageError": "sitelore.core.errors",
    "is_allowed": "sitelore.core.robots",
    "normalize_url": "sitelore.core.urls",
    "open_store": "sitelore.adapters.store",
    "parse_robots_txt": "sitelore.core.robots",
}

__all__ = [
    "ChangeKind",
    "ChangeReport",
    "ConfigError",
    "CrawlOptions",
    "CrawlSummary",
    "Document",
    "DocumentConverter",
    "Limits",
    "PageError",
    "PageOutcome",
    "Runtime",
    "Settings",
    "SiteloreError",
    "SkipReason",
    "SourceSpec",
    "UsageError",
    "__version__",
    "is_allowed",
    "normalize_url",
    "open_store",
    "parse_robots_txt",
]

if TYPE_CHECKING:
    from sitelore.adapters.store import open_store
    from sitelore.app.bootstrap import Runtime
    from sitelore.core.changes import ChangeReport
    from sitelore.core.config import Settings, SourceSpec
    from sitelore.core.convert import DocumentConverter
    from sitelore.core.errors import ConfigError, SiteloreError, UsageError
    from sitelore.core.models import (
        ChangeKind,
        CrawlSummary,
        Document,
        PageError,
        PageOutcome,
        SkipReason,
    )
    from sitelore.core.options import CrawlOptions, Limits
    from sitelore.core.robots import is_allowed, parse_robots_txt
    from sitelore.core.urls import normalize_url


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sitelore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
