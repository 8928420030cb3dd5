"""The three snapshot modes of the fetch path: live, capture and replay.

* :class:`LiveSnapshots` hands the crawl the real fetcher, unobserved.
* :class:`CaptureSnapshots` hands it the real fetcher with a :class:`CaptureWriter` as
  its exchange observer, wrapped in :class:`CapturingFetcher`, which only adds the
  final response's record to each snapshot (``Snapshot.capture``).
* :class:`ReplaySnapshots` hands it a :class:`ReplayFetcher`, which answers from the
  archive only. It never calls the live factory, so no ``ClientSession`` is created
  and no socket is opened. Redirects are replayed hop by hop under the live rules
  (:func:`~sitelore.adapters.fetcher.follow_redirect`: hop limit, loop check, address guard)
  and the crawl's ``check_hop`` runs before each, so robots.txt is re-checked as it
  was live. A page without a captured response fails alone with ``NoSnapshotError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Unpack

from sitelore.adapters.clock import SystemClock
from sitelore.adapters.fetcher import FetchOptions, follow_redirect, redirect_location
from sitelore.adapters.snapshots._archive import CaptureWriter, WarcReader
from sitelore.adapters.snapshots._index import CaptureIndex
from sitelore.core.errors import ArchiveError, NoSnapshotError, ResponseTooLargeError
from sitelore.core.guard import AddressPolicy, check_url
from sitelore.core.models import Snapshot, SnapshotMode, page_id
from sitelore.core.options import Limits
from sitelore.core.ports import Clock, Fetcher, LiveFetcher

__all__ = [
    "CaptureSnapshots",
    "CapturingFetcher",
    "LiveSnapshots",
    "ReplayFetcher",
    "ReplaySnapshots",
]


class LiveSnapshots:
    """``ports.Snapshots`` for plain crawls: the network, nothing recorded."""

    __slots__ = ()

    mode = SnapshotMode.LIVE  #: always ``live``

    def fetch_path(
        self, seed_id: str, live: LiveFetcher
    ) -> contextlib.AbstractAsyncContextManager[Fetcher]:
        """The real fetcher, unobserved."""
        return live(None)


@dataclasses.dataclass(frozen=True, slots=True)
class CapturingFetcher:
    """``ports.Fetcher`` that fetches through ``inner`` and names each response's record.

    ``inner`` reports every exchange to ``writer`` (its observer); this wrapper only
    sets ``Snapshot.capture`` to the record of the final response.
    """

    inner: Fetcher
    writer: CaptureWriter

    async def fetch(self, url: str, **options: Unpack[FetchOptions]) -> Snapshot:
        """Fetch ``url`` live; the snapshot names the WARC record of its final response."""
        snapshot = await self.inner.fetch(url, **options)
        ref = self.writer.ref_for(url, snapshot.final_url)
        return snapshot if ref is None else dataclasses.replace(snapshot, capture=ref)


class CaptureSnapshots:
    """``ports.Snapshots`` that records every exchange of a crawl into ``directory``.

    Each crawl writes a new WARC file there (the directory is created if needed) and
    indexes its responses in the directory's ``index.sqlite3``. ``info`` adds fields to
    the file's ``warcinfo`` record.
    """

    def __init__(
        self,
        directory: Path,
        *,
        clock: Clock | None = None,
        info: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = directory
        self._clock: Clock = clock or SystemClock()
        self._info = dict(info or {})

    mode = SnapshotMode.CAPTURE  #: always ``capture``

    def __repr__(self) -> str:
        return f"CaptureSnapshots({str(self.directory)!r})"

    @contextlib.asynccontextmanager
    async def fetch_path(self, seed_id: str, live: LiveFetcher) -> AsyncIterator[Fetcher]:
        """The live fetcher, observed by a writer into a new WARC file of the archive."""
        writer = CaptureWriter.open(self.directory, seed_id, now=self._clock.now(), info=self._info)
        async with contextlib.aclosing(writer), live(writer.record) as inner:
            yield CapturingFetcher(inner, writer)


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayFetcher:
    """``ports.Fetcher`` that serves responses from an archive only; it has no network.

    ``policy`` and ``limits`` are the live crawl's, so a replayed redirect is refused
    exactly where the live one was.
    """

    index: CaptureIndex
    seed_id: str
    _: dataclasses.KW_ONLY
    policy: AddressPolicy
    limits: Limits

    async def fetch(self, url: str, **options: Unpack[FetchOptions]) -> Snapshot:
        """Replay the fetch of ``url`` as captured: every hop from the archive.

        Raises:
            NoSnapshotError: no captured response for this page (or one of its hops),
                or the captured record is unreadable.
            InvalidURLError, BlockedURLError, TooManyRedirectsError,
            ResponseTooLargeError: as the live fetch would have.
        """
        target = check_url(url, policy=self.policy)
        pid = page_id(self.seed_id, url)
        max_bytes = options.get("max_bytes")
        cap = self.limits.max_page_bytes if max_bytes is None else max_bytes
        hop_limit = options.get("max_redirects")
        chain: list[str] = []
        seen = {target.url}
        while True:
            captured = await self._response(pid, url, target.url, len(chain))
            location = redirect_location(captured.status, captured.headers)
            if location is None:
                if len(captured.body) > cap and not options.get("truncate", False):
                    raise ResponseTooLargeError(
                        target.url, f"captured body is over the {cap}-byte cap"
                    )
                return dataclasses.replace(
                    captured,
                    url=url,
                    final_url=target.url,
                    body=captured.body[:cap],
                    redirects=tuple(chain),
                )
            chain.append(target.url if chain else url)
            target = await follow_redirect(
                target.url,
                location,
                seen=seen,
                hops=len(chain),
                max_redirects=self.limits.max_redirects if hop_limit is None else hop_limit,
                policy=self.policy,
                check_hop=options.get("check_hop"),
            )

    async def _response(self, pid: str, url: str, hop_url: str, hop: int) -> Snapshot:
        entry = self.index.lookup(pid, hop_url)
        if entry is None and hop > 0:
            # Crawls fetch a redirect target as its own page: its own capture answers.
            entry = self.index.latest(hop_url)
        if entry is None:
            what = "no captured response" if hop == 0 else f"no captured response for {hop_url}"
            raise NoSnapshotError(url, f"{what} in {self.index.directory}")
        try:
            return await WarcReader().read(entry.ref(self.index.directory))
        except ArchiveError as exc:
            raise NoSnapshotError(url, f"captured response unreadable: {exc}") from exc


class ReplaySnapshots:
    """``ports.Snapshots`` that replays a crawl from the archive in ``directory``.

    Entering the fetch path raises ``ArchiveError`` (kind ``invalid-config``) when
    ``directory`` holds no archive. ``policy`` and ``limits`` should be the ones the
    capture ran under (the runtime passes its own); the defaults are the strict ones.
    """

    def __init__(
        self,
        directory: Path,
        *,
        policy: AddressPolicy | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.directory = directory
        self._policy = policy or AddressPolicy()
        self._limits = limits or Limits()

    mode = SnapshotMode.REPLAY  #: always ``replay``

    def __repr__(self) -> str:
        return f"ReplaySnapshots({str(self.directory)!r})"

    @contextlib.asynccontextmanager
    async def fetch_path(self, seed_id: str, live: LiveFetcher) -> AsyncIterator[Fetcher]:
        """A fetcher over the archive; ``live`` is never called."""
        where = self.directory.expanduser().absolute()
        with contextlib.closing(CaptureIndex(where, create=False, readonly=True)) as index:
            yield ReplayFetcher(index, seed_id, policy=self._policy, limits=self._limits)
