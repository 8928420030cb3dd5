"""The parent's side of the pool: start, lend, time, kill and replace worker processes.

Workers are started on demand, up to ``workers``, as plain child processes
(``python -m sitelore.adapters.convert_pool._child``) talking frames over their stdin and
stdout, so a page's worker can be killed alone: over its time cap it is sent
SIGKILL, reaped, and the next page gets a fresh worker. Their CPU time therefore
shows in this process's ``RUSAGE_CHILDREN`` once they are reaped (at :meth:`aclose`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys

from sitelore.adapters.convert_pool._frames import DEFAULT_FACTORY, HEADER, Reply, frame, unpack
from sitelore.core.errors import (
    ConfigError,
    ConversionError,
    ConversionFailedError,
    UnsupportedContentTypeError,
)
from sitelore.core.models import Document

__all__ = ["ProcessConverter", "default_workers"]

log = logging.getLogger(__name__)

_CHILD = "sitelore.adapters.convert_pool._child"
#: How long a worker may take to import the converter and say it is ready.
_START_SECONDS = 60.0
#: How long a worker told to stop may take before it is killed.
_STOP_SECONDS = 5.0


def default_workers() -> int:
    """The cores this process may run on (at least 1)."""
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        return max(1, int(counter() or 1))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _exit_status(code: int | None) -> str:
    if code is None:
        return "still running, killed"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Worker:
    """One worker process and its two pipes."""

    proc: asyncio.subprocess.Process

    async def read(self) -> Reply:
        stdout = self.proc.stdout
        assert stdout is not None
        head = await stdout.readexactly(HEADER)
        reply: Reply = unpack(await stdout.readexactly(int.from_bytes(head, "big")))
        return reply

    async def call(self, request: bytes) -> Reply:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(request)
        await stdin.drain()
        return await self.read()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def stop(self) -> None:
        """Close its input (it exits by itself), killing it if it does not."""
        stdin = self.proc.stdin
        if stdin is not None:
            stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), _STOP_SECONDS)
        except TimeoutError:
            self.kill()
            await self.proc.wait()


class ProcessConverter(contextlib.AbstractAsyncContextManager["ProcessConverter"]):
    """``ports.Converter`` on up to ``workers`` processes; one page at a time each.

    Args:
        workers: how many pages convert at once (default: the machine's cores).
        page_timeout: seconds one page may take; over it the page fails
            (``conversion-failed``, naming the cap) and its worker is replaced.
        memory_mib: each worker's address-space bound (``RLIMIT_AS``); 0 for none.
        factory: ``module:callable`` building each worker's converter (tests pass
            converters that hang or crash on purpose).
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        page_timeout: float = 10.0,
        memory_mib: int = 2048,
        factory: str = DEFAULT_FACTORY,
    ) -> None:
        self.workers = workers if workers is not None else default_workers()
        self.page_timeout = page_timeout
        self.memory_mib = memory_mib
        self.factory = factory
        #: Workers killed (over the cap, died, asked to retire) and replaced so far.
        self.replaced = 0
        self._idle: list[_Worker] = []
        self._dying: set[asyncio.Task[int]] = set()
        self._free: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def convert(
        self, body: bytes, content_type: str, url: str, charset: str | None
    ) -> Document:
        """Convert one page in a worker; raise its typed error when it fails."""
        request = frame((body, content_type, url, charset))
        async with self._slots():
            worker = self._idle.pop() if self._idle else await self._start()
            status, payload, _ = await self._ask(worker, url, request)
        if status == "ok":
            assert isinstance(payload, Document)
            return payload
        if status == "unsupported":
            raise UnsupportedContentTypeError(url, payload)
        if status == "conversion":
            raise ConversionError(payload)
        raise ConversionFailedError(url, payload)

    async def warm(self) -> None:
        """Start one worker now if none is running, so the first page does not wait."""
        free = self._slots()
        if self._idle or free.locked():
            return
        async with free:
            self._idle.append(await self._start())

    async def aclose(self) -> None:
        """Stop every worker and reap it (and any killed one still being reaped)."""
        idle, self._idle = self._idle, []
        await asyncio.gather(*(worker.stop() for worker in idle))
        if self._dying:
            await asyncio.gather(*self._dying)

    def _slots(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._free is None or self._loop is not loop:
            for worker in self._idle:  # started on another event loop: unusable here
                worker.kill()
            self._idle = []
            self._loop, self._free = loop, asyncio.Semaphore(self.workers)
        return self._free

    async def _ask(self, worker: _Worker, url: str, request: bytes) -> Reply:
        healthy = False
        try:
            async with asyncio.timeout(self.page_timeout):
                reply = await worker.call(request)
            healthy = not reply[2]
            return reply
        except TimeoutError as exc:
            raise ConversionFailedError(
                url,
                f"took longer than the {self.page_timeout:g} s conversion cap "
                "(its worker was replaced)",
            ) from exc
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            code = await self._reaped(worker)
            raise ConversionFailedError(
                url, f"the conversion worker died ({_exit_status(code)}; it was replaced)"
            ) from exc
        finally:
            if healthy:
                self._idle.append(worker)
            else:
                self._retire(worker)

    async def _reaped(self, worker: _Worker) -> int | None:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(worker.proc.wait()), 1.0)
        return None

    def _retire(self, worker: _Worker) -> None:
        """Kill a worker that cannot be trusted with another page; reap it in the background."""
        worker.kill()
        stdin = worker.proc.stdin
        if stdin is not None:
            stdin.close()
        self.replaced += 1
        task = asyncio.get_running_loop().create_task(worker.proc.wait())
        self._dying.add(task)
        task.add_done_callback(self._dying.discard)

    async def _start(self) -> _Worker:
        argv = ["-m", _CHILD, "--memory-mib", str(self.memory_mib), "--factory", self.factory]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            raise ConfigError(f"conversion workers cannot start: {exc}") from exc
        worker = _Worker(proc)
        try:
            async with asyncio.timeout(_START_SECONDS):
                status, _, _ = await worker.read()
        except (TimeoutError, asyncio.IncompleteReadError) as exc:
            self._retire(worker)
            raise ConfigError(
                "conversion workers cannot start "
                f"({_exit_status(await self._reaped(worker))}); is the memory bound "
                f"({self.memory_mib} MiB, settings [convert] memory_mib) too small?"
            ) from exc
        if status != "ready":
            self._retire(worker)
            raise ConfigError(f"conversion worker said {status!r} instead of ready")
        log.debug("conversion worker %d started", proc.pid)
        return worker
