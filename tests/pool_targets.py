"""Converters for the conversion pool's tests: they hang, crash or run out of memory
on purpose, chosen by the page's path, and convert every other page for real.

Loaded inside the worker processes (``ProcessConverter(factory="tests.pool_targets:
Hostile")``), so they run there, never in the test process.
"""

from __future__ import annotations

import os
import signal
import time

from sitelore.core.convert import DocumentConverter
from sitelore.core.models import Document

__all__ = ["Hostile"]


class Hostile:
    """``(body, content_type, url, charset) -> Document``, hostile for some paths."""

    def __init__(self) -> None:
        self._inner = DocumentConverter()

    def __call__(self, body: bytes, content_type: str, url: str, charset: str | None) -> Document:
        path = url.rsplit("/", 1)[-1]
        if path.startswith("hang"):
            time.sleep(3600)
        elif path.startswith("crash"):
            os.kill(os.getpid(), signal.SIGSEGV)
        elif path.startswith("exit"):
            os._exit(3)
        elif path.startswith("oom"):
            raise MemoryError
        elif path.startswith("alloc"):
            bytearray(3 * 1024**3)  # more than the test's memory bound
        elif path.startswith("whoami"):
            size = len(self._inner(body, content_type, url, charset).links)
            cached = len(self._inner.link_cache)
            return Document(url=url, title=f"{os.getpid()} {cached} {size}", markdown="")
        return self._inner(body, content_type, url, charset)
