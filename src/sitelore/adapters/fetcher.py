"""The one egress path: fetch a URL with aiohttp through the address guard.

Never connects to an address the guard has not checked (the connector's resolver
checks every answer and hands aiohttp exactly those addresses), never follows a
redirect it has not re-checked, never reads or inflates a body past its cap, never
retries (a crawl retries through its frontier, see ``sitelore.crawl.page``), and never
reads proxy settings from the environment. aiohttp exceptions are translated in one place
(:func:`_translate_errors`) and never escape.

Choices made here:

- Cookies are never stored (``DummyCookieJar``); a caller's ``Cookie``,
  ``Authorization`` and ``Proxy-Authorization`` headers are dropped for good once a
  redirect leaves the first origin; ``If-None-Match`` / ``If-Modified-Since`` are
  sent to the first URL only (its validators say nothing about a redirect target).
  Callers cannot set ``User-Agent``, ``Accept-Encoding``, ``Host``, ``Connection``,
  ``Content-Length`` or ``Transfer-Encoding``.
- ``Accept-Encoding: gzip, deflate``. Brotli is not offered: no brotli decoder is a
  dependency, and one that cannot bound its output must not be used. A response in
  any other encoding, or in a chain of more than two, is an
  ``UnsupportedContentTypeError``.
- A DNS failure or empty answer is a ``NetworkError`` (no connection is made: fail
  closed); an answer the policy refuses is a ``BlockedURLError``.
- The per-page time budget (``timeout``, else ``limits.page_timeout_seconds``, never
  past ``deadline``) covers every hop and is measured on the injected clock.
- An ``observer`` (capture, see ``sitelore.adapters.snapshots``) is awaited after every exchange
  that produced a response, redirects included, with the request
  headers aiohttp actually sent and the body as kept (decompressed; empty for a
  redirect). It only watches: what ``fetch`` returns does not depend on it.

The module is about 650 lines because the resolver, the redirect loop and the
bounded inflater all raise through the one error mapping here;
split the inflater out first if it grows.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import socket
import urllib.parse
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Literal, NamedTuple, Self, TypedDict

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from sitelore.adapters.clock import SystemClock
from sitelore.core.config import default_user_agent
from sitelore.core.errors import (
    BlockedURLError,
    FetchTimeoutError,
    NetworkError,
    ResponseTooLargeError,
    SiteloreError,
    TooManyRedirectsError,
    UnsupportedContentTypeError,
    UsageError,
)
from sitelore.core.guard import AddressPolicy, Target, check_url, redact_url
from sitelore.core.models import Exchange, Headers, Snapshot
from sitelore.core.options import Limits
from sitelore.core.ports import Clock, ExchangeObserver, HopCheck, Resolver

__all__ = [
    "ACCEPT_ENCODING",
    "FetchOptions",
    "HttpFetcher",
    "SystemResolver",
    "follow_redirect",
    "header_problem",
    "redirect_location",
]

logger = logging.getLogger(__name__)

ACCEPT_ENCODING = "gzip, deflate"

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
# Validators belong to the URL asked for; a redirect target is fetched unconditionally.
_CONDITIONAL_HEADERS = frozenset({"if-none-match", "if-modified-since"})
_RESERVED_HEADERS = frozenset(
    {"user-agent", "accept-encoding", "host", "connection", "content-length", "transfer-encoding"}
)
_READ_CHUNK = 64 * 1024
_INFLATE_PIECE = 64 * 1024
_WIRE_SLACK = 64 * 1024
_MAX_ENCODINGS = 2
_MAX_GZIP_MEMBERS = 32
_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
#: What an observer's Exchange takes from a response under the same names.
_EXCHANGED = ("request_headers", "status", "reason", "headers", "body", "address")

#: Per-task sink for the addresses the guarded resolver handed to the request in flight,
#: so a snapshot can name the address even after aiohttp has released the connection.
_resolved: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "sitelore_fetcher_resolved", default=None
)


class FetchOptions(TypedDict, total=False):
    """The keyword arguments of ``Fetcher.fetch``, for fetchers that wrap another."""

    max_bytes: int | None
    headers: Mapping[str, str] | None
    check_hop: HopCheck | None
    timeout: float | None
    truncate: bool
    max_redirects: int | None


class SystemResolver:
    """``ports.Resolver`` on the event loop's ``getaddrinfo`` (every A and AAAA answer)."""

    __slots__ = ()

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        """Return every distinct address ``host`` resolves to; raise OSError on failure."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclasses.dataclass(eq=False)
class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver seam: look up, check every answer, return only checked addresses."""

    resolver: Resolver
    policy: AddressPolicy
    overrides: Mapping[tuple[str, int], str]

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._lookup(host, port)
        for address in addresses:
            reason = self.policy.refusal(address, host=host)
            if reason is not None:
                logger.info("refused %s: it resolves to %s (%s)", host, address, reason)
                raise BlockedURLError(host, f"{host} resolves to {address}: {reason}", address)
        results = [
            _resolve_result(host, address, port)
            for address in addresses
            if family in (socket.AF_UNSPEC, _family_of(address))
        ]
        if not results:
            raise OSError(f"{host}: no address of the requested family")
        sink = _resolved.get()
        if sink is not None:
            sink[:] = [result["host"] for result in results]
        return results

    async def close(self) -> None:
        """Nothing to release: the injected resolver belongs to whoever made it."""

    async def _lookup(self, host: str, port: int) -> list[str]:
        pinned = self.overrides.get((host, port))
        if pinned is not None:
            return [pinned]
        answers = [str(answer) for answer in await self.resolver.resolve(host, port)]
        if not answers:
            raise OSError(f"{host}: the resolver returned no address")
        return answers


def _family_of(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def _resolve_result(host: str, address: str, port: int) -> ResolveResult:
    return {
        "hostname": host,
        "host": address,
        "port": port,
        "family": _family_of(address),
        "proto": 0,
        "flags": _NUMERIC_FLAGS,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class _Response:
    """One HTTP exchange as the redirect loop sees it."""

    status: int
    headers: Headers
    body: bytes
    address: str | None
    location: str | None
    reason: str = ""
    version: str = "1.1"
    request_headers: Headers = dataclasses.field(default_factory=Headers)


class HttpFetcher:
    """``ports.Fetcher`` on one aiohttp session: guarded, capped, timed; one attempt per fetch.

    Use it as an async context manager; it creates one ``ClientSession`` on entry
    and closes it on exit. It cannot be reopened::

        async with HttpFetcher(user_agent=ua, policy=AddressPolicy(["10.0.0.0/8"])) as f:
            snapshot = await f.fetch("https://docs.example.org/")

    ``connect_timeout`` bounds connecting; ``read_timeout`` bounds the wait for the
    first byte and every later silence (idle read); the per-fetch budget bounds the
    whole fetch, redirects included.
    """

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        policy: AddressPolicy | None = None,
        resolver: Resolver | None = None,
        resolve_overrides: Mapping[tuple[str, int], str] | None = None,
        clock: Clock | None = None,
        limits: Limits | None = None,
        deadline: float | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 10.0,
        observer: ExchangeObserver | None = None,
    ) -> None:
        self._user_agent = user_agent or default_user_agent()
        self._policy = policy or AddressPolicy()
        self._resolver: Resolver = resolver or SystemResolver()
        self._overrides = {
            (host.lower().rstrip("."), port): address
            for (host, port), address in (resolve_overrides or {}).items()
        }
        self._clock: Clock = clock or SystemClock()
        self._limits = limits or Limits()
        self._deadline = deadline
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout, sock_read=read_timeout
        )
        self._observer = observer
        self._session: aiohttp.ClientSession | None = None
        self._state: Literal["unopened", "opened", "closed"] = "unopened"

    def __repr__(self) -> str:
        return f"HttpFetcher(state={self._state}, policy={self._policy!r})"

    async def __aenter__(self) -> Self:
        if self._state != "unopened":
            raise RuntimeError(f"HttpFetcher cannot be opened when {self._state}")
        connector = aiohttp.TCPConnector(
            resolver=_GuardedResolver(self._resolver, self._policy, self._overrides),
            use_dns_cache=False,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            trust_env=False,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=self._timeout,
        )
        self._state = "opened"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session this fetcher created; later fetches raise RuntimeError."""
        session, self._session = self._session, None
        self._state = "closed"
        if session is not None:
            await session.close()

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
        """Fetch ``url``, following redirects by hand; return the final response.

        ``Snapshot.url`` is ``url`` as given; ``final_url`` and the later entries of
        ``redirects`` are the normalised URLs actually requested. ``truncate``: a body
        over the cap is cut at the cap and returned (nothing past it is read).
        ``max_redirects``: this fetch's hop limit (default ``limits.max_redirects``).

        Raises:
            InvalidURLError, BlockedURLError: the URL or a redirect hop is refused.
            TooManyRedirectsError, ResponseTooLargeError, FetchTimeoutError,
            NetworkError, UnsupportedContentTypeError: no final response could be had.
        """
        session = self._open_session()
        target = check_url(url, policy=self._policy)
        started = self._clock.monotonic()
        budget_end = self._budget_end(started, timeout)
        cap = _BodyCap(self._limits.max_page_bytes if max_bytes is None else max_bytes, truncate)
        sent = _request_headers(headers, self._user_agent)
        first_origin = target.origin
        hop_limit = self._limits.max_redirects if max_redirects is None else max_redirects
        chain: list[str] = []
        seen = {target.url}
        while True:
            started_at = self._clock.now()
            response = await self._exchange(session, target, sent, cap, budget_end)
            if self._observer is not None:  # capture: every exchange that got a response
                await self._observer(_exchange_of((url, len(chain)), target, response, started_at))
            if response.location is None:
                return Snapshot(
                    url=url,
                    final_url=target.url,
                    status=response.status,
                    headers=response.headers,
                    body=response.body,
                    fetched_at=self._clock.now(),
                    elapsed_ms=(self._clock.monotonic() - started) * 1000.0,
                    redirects=tuple(chain),
                    address=response.address,
                )
            chain.append(target.url if chain else url)
            target = await follow_redirect(
                target.url,
                response.location,
                seen=seen,
                hops=len(chain),
                max_redirects=hop_limit,
                policy=self._policy,
                check_hop=check_hop,
            )
            sent = {k: v for k, v in sent.items() if k.lower() not in _CONDITIONAL_HEADERS}
            if target.origin != first_origin:
                sent = {k: v for k, v in sent.items() if k.lower() not in _CREDENTIAL_HEADERS}

    def _budget_end(self, started: float, timeout: float | None) -> float:
        total = self._limits.page_timeout_seconds if timeout is None else timeout
        end = started + total
        return end if self._deadline is None else min(end, self._deadline)

    # ------------------------------------------------------------ one exchange

    async def _exchange(
        self,
        session: aiohttp.ClientSession,
        target: Target,
        headers: Mapping[str, str],
        cap: _BodyCap,
        budget_end: float,
    ) -> _Response:
        remaining = budget_end - self._clock.monotonic()
        if remaining <= 0:
            raise FetchTimeoutError(target.url, "no time left in the page budget")
        logger.debug("GET %s", target.url)
        resolved: list[str] = []
        token = _resolved.set(resolved)
        try:
            with _translate_errors(target.url, remaining):
                async with asyncio.timeout(remaining):
                    request = session.get(
                        URL(target.url, encoded=True), headers=dict(headers), allow_redirects=False
                    )
                    async with request as resp:
                        known = target.ip or (resolved[0] if len(resolved) == 1 else None)
                        return await _read_response(resp, target.url, cap, known)
        finally:
            _resolved.reset(token)

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            state = "closed" if self._state == "closed" else "not opened (use async with)"
            raise RuntimeError(f"HttpFetcher is {state}")
        return self._session


# ---------------------------------------------------------------- redirects (shared)


async def follow_redirect(
    current: str,
    location: str,
    *,
    seen: set[str],
    hops: int,
    max_redirects: int,
    policy: AddressPolicy,
    check_hop: HopCheck | None,
) -> Target:
    """The checked target of redirect hop number ``hops`` from ``current`` to ``location``.

    The one rule for live and replayed fetches: at most ``max_redirects`` hops, http(s)
    only, each target passed by the address guard, no loop back to a URL in ``seen``
    (the target is added to it), then the caller's ``check_hop``.
    """
    if hops > max_redirects:
        raise TooManyRedirectsError(current, f"more than {max_redirects} redirects")
    try:
        joined = urllib.parse.urljoin(current, location)
        scheme = urllib.parse.urlsplit(joined).scheme.lower()
    except ValueError:
        joined, scheme = location, "http"  # let check_url name what is wrong
    if scheme not in ("http", "https"):
        raise BlockedURLError(redact_url(joined), f"redirect from {current} to a {scheme!r} URL")
    target = check_url(joined, policy=policy)
    if target.url in seen:
        raise TooManyRedirectsError(current, f"redirect loop back to {target.url}")
    seen.add(target.url)
    if check_hop is not None:
        await check_hop(target.url)
    logger.debug("redirect %s -> %s", current, target.url)
    return target


def redirect_location(status: int, headers: Headers) -> str | None:
    """The Location of a redirect response (301, 302, 303, 307, 308), else None."""
    if status not in _REDIRECT_STATUSES:
        return None
    location = (headers.get("location") or "").strip()
    return location or None


# ---------------------------------------------------------------- responses


def _exchange_of(
    hop: tuple[str, int], target: Target, response: _Response, started_at: datetime
) -> Exchange:
    """One completed exchange as the observer (capture) is told it."""
    fetch_url, number = hop
    return Exchange(
        **{name: getattr(response, name) for name in _EXCHANGED},
        fetch_url=fetch_url,
        hop=number,
        url=target.url,
        method="GET",
        http_version=response.version,
        body_read=response.location is None,
        started_at=started_at,
    )


async def _read_response(
    resp: aiohttp.ClientResponse, url: str, cap: _BodyCap, known_address: str | None
) -> _Response:
    headers = Headers.of((str(k), _header_text(v)) for k, v in resp.headers.items())
    address = _peer_address(resp) or known_address
    location = redirect_location(resp.status, headers)
    sent = Headers.of((str(k), v) for k, v in resp.request_info.headers.items())
    reason = _header_text(resp.reason or "")
    version = f"{resp.version.major}.{resp.version.minor}" if resp.version else "1.1"
    if location is not None:
        body = b""  # a redirect's body is never read
    elif 200 <= resp.status < 300:
        body = await _read_body(resp, headers, url, cap)
    else:
        body = await _error_body(resp, headers, url, cap)
    return _Response(resp.status, headers, body, address, location, reason, version, sent)


async def _error_body(
    resp: aiohttp.ClientResponse, headers: Headers, url: str, cap: _BodyCap
) -> bytes:
    """The body of an answer that is no 2xx: cut at the cap, empty if it cannot be decoded.

    What a 404, a 429 or a 503 means is its status (and Retry-After), never its body: a
    ``Content-Encoding: br`` or a broken gzip on an error page must not turn a 404 into
    ``unsupported-content-type`` (an ``update`` would keep the removed page) or hide a
    503's Retry-After behind a network error.
    """
    try:
        return await _read_body(resp, headers, url, _BodyCap(cap.limit, truncate=True))
    except (UnsupportedContentTypeError, zlib.error) as exc:
        logger.debug("HTTP %d body of %s not decoded: %s", resp.status, url, exc)
        return b""


def _header_text(value: str) -> str:
    """A header value as text: bytes that are not UTF-8 become U+FFFD.

    aiohttp keeps them as lone surrogates, which no store, URL or charset lookup
    can take (an ``ETag: \\xff`` would fail its page at the store).
    """
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _peer_address(resp: aiohttp.ClientResponse) -> str | None:
    """The connected peer, while aiohttp still holds the connection (large bodies)."""
    connection = resp.connection
    transport = connection.transport if connection is not None else None
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if peer else None


class _BodyCap(NamedTuple):
    """How much of a body to keep, and whether a longer one is cut there or refused."""

    limit: int
    truncate: bool = False


async def _read_body(
    resp: aiohttp.ClientResponse, headers: Headers, url: str, cap: _BodyCap
) -> bytes:
    """Stream the body, inflating it piece by piece; stop as soon as it passes the cap.

    Past the cap the body is refused (``ResponseTooLargeError``), or with
    ``cap.truncate`` cut at the cap and returned; either way nothing more is read.
    """
    limit, truncate = cap
    stages = _decoders(headers.get_all("content-encoding"), url)
    wire_cap = limit + _WIRE_SLACK if stages else limit
    declared = resp.content_length
    if declared is not None and declared > wire_cap and not truncate:
        raise ResponseTooLargeError(url, f"Content-Length {declared} is over the {limit}-byte cap")
    body = bytearray()
    wire = 0
    async for chunk in resp.content.iter_chunked(_READ_CHUNK):
        wire += len(chunk)
        if wire > wire_cap and not truncate:
            raise ResponseTooLargeError(url, f"body is over the {limit}-byte cap")
        for piece in _decode(stages, chunk):
            body += piece
            if len(body) > limit:
                if truncate:
                    return bytes(body[:limit])
                raise ResponseTooLargeError(url, f"decompressed body is over the {limit}-byte cap")
        if wire > wire_cap:  # truncating: compressed bytes that inflate to little
            return bytes(body)
    if not all(stage.finished for stage in stages):
        # The connection ended inside the compressed stream: a part of a page, not a page.
        raise zlib.error("the compressed body ends before its end (truncated)")
    return bytes(body)


class _Inflater:
    """One gzip or deflate layer, inflated in bounded pieces (never a whole chunk at once)."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding != "deflate"
        self._head = b""
        self._members = 0
        self._fed = False
        self._zlib: zlib._Decompress | None = self._new() if self._gzip else None

    @property
    def finished(self) -> bool:
        """True once the stream has ended, or if it never began (an empty body)."""
        if not self._fed:
            return True
        return self._zlib is not None and self._zlib.eof

    def _new(self, wbits: int | None = None) -> zlib._Decompress:
        self._members += 1
        if self._members > _MAX_GZIP_MEMBERS:
            raise zlib.error(f"more than {_MAX_GZIP_MEMBERS} gzip members")
        return zlib.decompressobj(16 + zlib.MAX_WBITS if wbits is None else wbits)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Yield the output of ``data`` in pieces of at most ``_INFLATE_PIECE`` bytes."""
        self._fed = self._fed or bool(data)
        decoder = self._zlib or self._sniff_deflate(data)
        if decoder is None:
            return
        pending = self._head + data if self._zlib is None else data
        self._zlib, self._head = decoder, b""
        while True:
            out = decoder.decompress(pending, _INFLATE_PIECE)
            pending = decoder.unconsumed_tail
            if out:
                yield out
            if decoder.eof:
                pending, decoder = self._after_end(decoder, pending)
                if decoder is None:
                    return
            if not pending and len(out) < _INFLATE_PIECE:
                return

    def _sniff_deflate(self, data: bytes) -> zlib._Decompress | None:
        """HTTP "deflate" is meant to be zlib-wrapped; some servers send it raw."""
        head = self._head + data
        if len(head) < 2:  # the two header bytes of RFC 1950
            self._head = head
            return None
        wrapped = head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return self._new(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)

    def _after_end(
        self, decoder: zlib._Decompress, pending: bytes
    ) -> tuple[bytes, zlib._Decompress | None]:
        rest = decoder.unused_data + pending
        if not self._gzip or not rest.strip(b"\0"):
            return b"", None  # trailing bytes after a deflate stream, or padding: ignored
        self._zlib = self._new()
        return rest, self._zlib


def _decoders(values: list[str], url: str) -> list[_Inflater]:
    """The layers to undo, outermost first (the reverse of the order listed)."""
    names = [token.strip().lower() for value in values for token in value.split(",")]
    names = [name for name in names if name and name != "identity"]
    if len(names) > _MAX_ENCODINGS:
        raise UnsupportedContentTypeError(url, f"{len(names)} content encodings (at most 2)")
    for name in names:
        if name not in ("gzip", "x-gzip", "deflate"):
            raise UnsupportedContentTypeError(url, f"unsupported Content-Encoding {name!r}")
    return [_Inflater(name) for name in reversed(names)]


def _decode(stages: Sequence[_Inflater], data: bytes) -> Iterator[bytes]:
    if not stages:
        yield data
        return
    first, rest = stages[0], stages[1:]
    for piece in first.feed(data):
        yield from _decode(rest, piece)


# ---------------------------------------------------------------- headers and errors


#: What a header line may not hold (RFC 9110 5.5): the C0 controls but tab, and DEL.
#: aiohttp refuses the same set with a bare ValueError when it writes the request.
_FORBIDDEN_IN_HEADER = frozenset(chr(c) for c in (*range(0x09), *range(0x0A, 0x20), 0x7F))


def header_problem(name: str, value: str) -> str | None:
    """Why a request header cannot be sent as given (control characters), or None."""
    if not name or not _FORBIDDEN_IN_HEADER.isdisjoint(name + value):
        return "control characters (line breaks, NUL, ...) are not allowed in a header"
    return None


def _request_headers(headers: Mapping[str, str] | None, user_agent: str) -> dict[str, str]:
    sent: dict[str, str] = {}
    for name, value in (headers or {}).items():
        problem = header_problem(name, value)
        if problem is not None:
            raise UsageError(f"header {name!r}: {problem}")
        if name.lower() not in _RESERVED_HEADERS:
            sent[name] = value
    sent["User-Agent"] = user_agent
    sent["Accept-Encoding"] = ACCEPT_ENCODING
    return sent


@contextlib.contextmanager
def _translate_errors(url: str, budget: float) -> Iterator[None]:
    """The one place where aiohttp, OS and zlib errors become sitelore errors."""
    try:
        yield
    except BlockedURLError as exc:
        if exc.url == url:
            raise
        raise BlockedURLError(url, exc.reason, exc.address) from exc
    except SiteloreError:
        raise
    except TimeoutError as exc:
        raise FetchTimeoutError(url, _timeout_message(exc, budget)) from exc
    except zlib.error as exc:
        raise NetworkError(url, f"invalid compressed body ({exc})") from exc
    except (aiohttp.ClientError, OSError) as exc:
        blocked = _blocked_cause(exc)
        if blocked is not None:
            raise BlockedURLError(url, blocked.reason, blocked.address) from exc
        raise NetworkError(url, _describe(exc)) from exc


def _timeout_message(exc: TimeoutError, budget: float) -> str:
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "timed out connecting"
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return "timed out waiting for data from the server"
    return f"timed out: the page budget of {budget:.1f}s ran out"


def _blocked_cause(exc: BaseException) -> BlockedURLError | None:
    """Find a guard refusal that aiohttp wrapped in one of its own errors."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, BlockedURLError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"could not resolve host ({exc.os_error})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"could not connect ({exc.os_error})"
    # aiohttp reports a response its parser refuses as a "400" of its own making (the
    # server never sent one): say what was wrong with the response instead.
    if isinstance(exc, aiohttp.ClientResponseError):
        return "malformed response: " + " ".join(exc.message.split())
    parser = exc.__cause__
    if isinstance(exc, aiohttp.ClientPayloadError) and isinstance(parser, HttpProcessingError):
        return "malformed or incomplete body: " + " ".join(parser.message.split())
    text = " ".join(str(exc).split())  # one line: aiohttp quotes raw header lines
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
