"""The conversion pool: real worker processes, a time cap per page, a memory bound.

Hostile converters (``tests.pool_targets``) hang, crash, exit or run out of memory
inside the workers; each costs its page a ``conversion-failed`` error and its
worker, and the next page converts in a fresh one. Guards bound every test's time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from sitelore.adapters.convert_pool import ProcessConverter, default_workers
from sitelore.core.errors import (
    ConfigError,
    ConversionError,
    ConversionFailedError,
    ErrorKind,
    UnsupportedContentTypeError,
)
from sitelore.core.sections import split_sections

HOSTILE = "tests.pool_targets:Hostile"
PAGE = b"<html><head><title>T</title></head><body><main><h1>T</h1><p>text</p>"
PAGE += b'<a href="a.html">a</a><a href="../b.html">b</a></main></body></html>'
BASE = "http://docs.test/dir/"
GUARD = 30.0  # no test may take longer, whatever breaks


async def whoami(pool: ProcessConverter, name: str = "whoami") -> tuple[int, int]:
    """(worker pid, link cache size) of the worker that converts the next page."""
    document = await pool.convert(PAGE, "text/html", BASE + name, None)
    pid, cached, _ = document.title.split()
    return int(pid), int(cached)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_pages_convert_in_another_process_with_a_link_cache_per_worker() -> None:
    """A worker converts many pages, keeping its link cache; it is reaped at close."""
    async with asyncio.timeout(GUARD):
        async with ProcessConverter(workers=1, factory=HOSTILE) as pool:
            first, cached_first = await whoami(pool)
            second, cached_second = await whoami(pool, "whoami-again")
            document = await pool.convert(PAGE, "text/html", BASE + "page.html", None)
        assert first == second != os.getpid()
        assert cached_second >= cached_first > 0
        assert document.title == "T"
        assert document.links == ("http://docs.test/dir/a.html", "http://docs.test/b.html")
        assert not alive(first)


async def test_the_real_converter_runs_by_default() -> None:
    """Without a factory the workers run sitelore's converter."""
    async with asyncio.timeout(GUARD), ProcessConverter(workers=1) as pool:
        document = await pool.convert(PAGE, "text/html; charset=punycode", BASE + "p", None)
    assert document.markdown.startswith("# T")
    # Sections are cut in the worker too, so the store does not cut them on the event loop.
    assert document.sections == tuple(split_sections(document.markdown))
    assert document.sections


@pytest.mark.slow
async def test_a_page_over_its_cap_fails_naming_the_cap_and_its_worker_is_replaced() -> None:
    """A hanging conversion is cut at the cap; the next page gets a fresh worker."""
    async with (
        asyncio.timeout(GUARD),
        ProcessConverter(workers=1, page_timeout=0.5, factory=HOSTILE) as pool,
    ):
        before, _ = await whoami(pool)
        with pytest.raises(ConversionFailedError, match=r"0\.5 s conversion cap") as info:
            await pool.convert(PAGE, "text/html", BASE + "hang", None)
        after, _ = await whoami(pool)
        assert info.value.kind is ErrorKind.CONVERSION_FAILED
        assert pool.replaced == 1
        assert after != before
        await asyncio.sleep(0.1)
        assert not alive(before)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("crash", r"worker died \(killed by signal 11"),
        ("exit", r"worker died \(exit code 3"),
        ("oom", r"out of memory"),
        ("alloc", r"out of memory|MemoryError|worker died"),
    ],
)
async def test_a_worker_that_dies_fails_its_page_and_is_replaced(path: str, reason: str) -> None:
    """A crash, an exit or the memory bound cost one page; the pool goes on."""
    async with (
        asyncio.timeout(GUARD),
        ProcessConverter(workers=1, memory_mib=1024, factory=HOSTILE) as pool,
    ):
        before, _ = await whoami(pool)
        with pytest.raises(ConversionFailedError, match=reason):
            await pool.convert(PAGE, "text/html", BASE + path, None)
        after, _ = await whoami(pool)
        assert pool.replaced == 1
        assert after != before


async def test_typed_errors_come_back_as_themselves_and_keep_the_worker() -> None:
    """Unsupported types and unreadable PDFs keep their own kinds; no worker is lost."""
    async with asyncio.timeout(GUARD), ProcessConverter(workers=1) as pool:
        with pytest.raises(UnsupportedContentTypeError) as unsupported:
            await pool.convert(b"{}", "application/json", BASE + "x.json", None)
        with pytest.raises(ConversionError, match="not a readable PDF") as pdf:
            await pool.convert(b"%PDF-broken", "application/pdf", BASE + "x.pdf", None)
        bomb = b"<div " + b" ".join(b"a%d=1" % i for i in range(100_000)) + b">x</div>"
        with pytest.raises(ConversionFailedError, match="more than 1000 attributes"):
            await pool.convert(bomb, "text/html", BASE + "bomb", None)
        assert unsupported.value.url == BASE + "x.json"
        assert pdf.value.kind is ErrorKind.UNSUPPORTED_CONTENT_TYPE
        assert pool.replaced == 0


async def test_at_most_workers_pages_convert_at_once() -> None:
    """Twelve pages at once run on no more than two processes."""
    async with asyncio.timeout(GUARD), ProcessConverter(workers=2, factory=HOSTILE) as pool:
        found = await asyncio.gather(*(whoami(pool, f"whoami-{n}") for n in range(12)))
    assert 1 <= len({pid for pid, _ in found}) <= 2


async def test_workers_that_cannot_start_are_a_config_error() -> None:
    """A memory bound too small to even start Python is reported as such."""
    async with asyncio.timeout(GUARD), ProcessConverter(workers=1, memory_mib=8) as pool:
        with pytest.raises(ConfigError, match="memory bound"):
            await pool.convert(PAGE, "text/html", BASE + "p", None)


async def test_a_cancelled_conversion_kills_its_worker() -> None:
    """A crawl that stops mid-conversion leaves no worker behind."""
    async with asyncio.timeout(GUARD), ProcessConverter(workers=1, factory=HOSTILE) as pool:
        pid, _ = await whoami(pool)
        task = asyncio.create_task(pool.convert(PAGE, "text/html", BASE + "hang", None))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not alive(pid)


def test_a_worker_process_loads_neither_the_pool_nor_asyncio() -> None:
    """A worker imports the package for its frames only (it starts ~30% faster)."""
    code = (
        "import sys, sitelore.adapters.convert_pool._child; "
        "print(sorted(m for m in ('asyncio', 'sitelore.adapters.convert_pool._pool') "
        "if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.strip() == "[]"


def test_the_default_size_is_the_machines_cores() -> None:
    """One worker per core this process may use."""
    assert default_workers() == len(os.sched_getaffinity(0))
