"""Fakes of sitelore's ports for tests: a clock, a resolver and a fetcher, all scripted.

Every unit test that needs time, DNS or HTTP takes one of these instead of patching a
global. Each implements its port (``sitelore.core.ports``) exactly, so mypy checks the test
against the real contract:

- :class:`FakeClock` (``Clock``): ``sleep`` advances time at once and records the wait;
  with ``tick`` every ``now()`` is ``tick`` seconds later than the one before (stores
  stamp each write with a new time).
- :class:`FakeResolver` (``Resolver``): answers from a table, one answer per lookup.
- :class:`FakeFetcher` (``Fetcher``): serves :class:`Route` s keyed by absolute URL,
  follows redirects calling ``check_hop`` before each hop as ``HttpFetcher`` does, and
  records every call, and every request with the clock time it was sent.

>>> import asyncio
>>> fetcher = FakeFetcher({"https://a.test/": Route(redirect="https://a.test/b"),
...                        "https://a.test/b": Route("<p>B</p>")})
>>> snapshot = asyncio.run(fetcher.fetch("https://a.test/"))
>>> snapshot.final_url, snapshot.redirects, fetcher.requests
('https://a.test/b', ('https://a.test/',), [(1000.0, 'https://a.test/'), (1000.0, 'https://a.test/b')])
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from sitelore.core.models import CaptureRef, Headers, Snapshot
from sitelore.core.ports import HopCheck

HTML = "text/html; charset=utf-8"


class FakeClock:
    """A clock whose ``sleep`` advances time instantly and records every wait.

    ``monotonic()`` starts at ``start``; ``now()`` is 2026-01-01 UTC plus the same
    seconds. With ``tick`` each ``now()`` first moves time on by ``tick`` seconds, so
    ``FakeClock(start=0, tick=1).now`` stamps writes 1 s, 2 s, 3 s ... after midnight.
    """

    def __init__(self, start: float = 1000.0, *, tick: float = 0.0) -> None:
        self.time = start
        self.tick = tick
        self.sleeps: list[float] = []
        self._epoch = datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.time

    def now(self) -> datetime:
        self.time += self.tick
        return self._epoch + timedelta(seconds=self.time)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += max(0.0, seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.time += seconds


class FakeResolver:
    """Answers from a table; a list of answers per host is served one call at a time.

    ``FakeResolver({"evil.test": [["93.184.216.34"], ["127.0.0.1"]]})`` answers the
    public address on the first lookup and loopback on the second (DNS rebinding).
    A host missing from the table raises ``OSError`` like a failed lookup.
    """

    def __init__(self, table: Mapping[str, Sequence[Iterable[str]] | Iterable[str]]) -> None:
        self._answers: dict[str, list[list[str]]] = {}
        for host, answers in table.items():
            answers = list(answers)
            if answers and isinstance(answers[0], str):
                self._answers[host] = [[str(a) for a in answers]]
            else:
                self._answers[host] = [list(a) for a in answers]
        self.calls: list[tuple[str, int]] = []

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        answers = self._answers.get(host)
        if not answers:
            raise OSError(f"no such host: {host}")
        return answers.pop(0) if len(answers) > 1 else answers[0]


@dataclasses.dataclass(frozen=True)
class Route:
    """One scripted answer of :class:`FakeFetcher`.

    ``redirect`` makes the answer a redirect to that URL (its status is not used);
    ``error`` is raised instead of answering; ``capture`` tags the snapshot as read
    from (or written to) that WARC record.
    """

    body: str | bytes = ""
    status: int = 200
    content_type: str = HTML
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    redirect: str | None = None
    error: BaseException | None = None
    capture: CaptureRef | None = None

    @property
    def data(self) -> bytes:
        """The body as bytes."""
        return self.body.encode() if isinstance(self.body, str) else self.body

    @property
    def etag(self) -> str:
        """A strong validator made from the body (what a conditional fetcher sends)."""
        return '"' + hashlib.sha256(self.data).hexdigest()[:12] + '"'


def page(title: str, *links: str, extra: str = "") -> str:
    """An HTML page to serve: ``title``, a nav list of ``links``, a paragraph of content.

    ``extra`` goes into ``<head>`` (a ``<meta name="robots">``, a ``<base>``).
    """
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<html><head><title>{title}</title>{extra}</head><body>"
        f"<nav><ul>{anchors}</ul></nav><main><h1>{title}</h1>"
        f"<p>Some text about {title} that is long enough to be content.</p></main></body></html>"
    )


#: What :class:`FakeFetcher` answers for a URL its table does not hold.
NOT_FOUND = Route("not found", status=404)


@dataclasses.dataclass(frozen=True)
class Call:
    """The arguments of one ``fetch`` call (headers copied; ``{}`` when none were given)."""

    url: str
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    max_bytes: int | None = None
    timeout: float | None = None
    truncate: bool = False
    max_redirects: int | None = None


class FakeFetcher:
    """The ``Fetcher`` port over a table of :class:`Route` s keyed by absolute URL.

    The table is read at every request, so a test may change it between crawls. A
    sequence of routes for one URL is served one request at a time, its last route
    repeating (``[Route(error=...), Route(body)]``: fails once, then answers). A URL
    missing from the table answers :data:`NOT_FOUND`. Like ``HttpFetcher``, a redirect
    route is followed by hand: ``check_hop`` is awaited before each target is requested
    (raising there ends the fetch), and ``truncate`` cuts a body at ``max_bytes``.

    Records: ``calls`` (one :class:`Call` a ``fetch``; ``urls`` lists their URLs),
    ``requests`` (``(clock time, URL)`` of every HTTP request, redirect hops included)
    and ``most_in_flight`` (the most fetches running at once).

    Options: ``clock`` times the requests and stamps ``fetched_at`` (a fresh
    :class:`FakeClock` when omitted). ``turns`` gives fetches latency in loop turns:
    ``turns[url]`` for the URLs it names, and 1 to 3 turns, varying from call to call,
    for the rest, so concurrent fetches finish out of order. ``conditional`` makes the
    site keep validators: every answer carries its route's ETag, and a 200 whose ETag
    the request's ``If-None-Match`` names becomes an empty 304.
    """

    def __init__(
        self,
        routes: Mapping[str, Route | Sequence[Route]],
        *,
        clock: FakeClock | None = None,
        turns: Mapping[str, int] | None = None,
        conditional: bool = False,
    ) -> None:
        self.routes = routes
        self.clock = clock if clock is not None else FakeClock()
        self.turns = turns
        self.conditional = conditional
        self.calls: list[Call] = []
        self.requests: list[tuple[float, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._served: collections.Counter[str] = collections.Counter()

    @property
    def urls(self) -> list[str]:
        """The URL of each ``fetch`` call, in order (redirect hops not included)."""
        return [call.url for call in self.calls]

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        timeout: float | None = None,
        truncate: bool = False,
        max_redirects: int | None = None,
    ) -> Snapshot:
        call = Call(url, dict(headers or {}), max_bytes, timeout, truncate, max_redirects)
        self.calls.append(call)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(self._latency(url)):
                await asyncio.sleep(0)
            await asyncio.sleep(0)  # a real fetch suspends; let the consumer run
            return await self._follow(call, check_hop)
        finally:
            self.in_flight -= 1

    def _latency(self, url: str) -> int:
        if self.turns is None:
            return 0
        return self.turns.get(url, 1 + len(self.calls) % 3)

    def _route(self, url: str) -> Route:
        answers = self.routes.get(url, NOT_FOUND)
        if isinstance(answers, Route):
            return answers
        served = self._served[url]
        self._served[url] += 1
        return answers[min(served, len(answers) - 1)]

    async def _follow(self, call: Call, check_hop: HopCheck | None) -> Snapshot:
        chain: list[str] = []
        current = call.url
        while True:
            self.requests.append((self.clock.monotonic(), current))
            route = self._route(current)
            if route.error is not None:
                raise route.error
            if route.redirect is None:
                break
            chain.append(current)
            current = route.redirect
            if check_hop is not None:
                await check_hop(current)
        return self._answer(call, current, route, tuple(chain))

    def _answer(self, call: Call, final_url: str, route: Route, chain: tuple[str, ...]) -> Snapshot:
        status, body = route.status, route.data
        pairs = [("Content-Type", route.content_type)]
        if self.conditional:
            pairs.append(("ETag", route.etag))
            if status == 200 and call.headers.get("If-None-Match") == route.etag:
                status, body = 304, b""
        if call.truncate and call.max_bytes is not None:
            body = body[: call.max_bytes]
        return Snapshot(
            url=call.url,
            final_url=final_url,
            status=status,
            headers=Headers.of([*pairs, *route.headers.items()]),
            body=body,
            fetched_at=self.clock.now(),
            elapsed_ms=1.0,
            redirects=chain,
            capture=route.capture,
        )
