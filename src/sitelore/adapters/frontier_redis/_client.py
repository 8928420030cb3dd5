"""A small async client over the frontier's Lua scripts: the only module that speaks Redis.

Every frontier change goes through one script (``_scripts``); this module only packs
arguments, unpacks replies into records, checks the server at start-up, and turns
redis-py errors into sitelore ones (``ConfigError`` when connecting, ``FrontierError``
later). It never decides what to crawl: the worker does.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from sitelore.adapters.frontier_redis import _scripts
from sitelore.adapters.frontier_redis._codec import FrontierItem, decode_item, fingerprint
from sitelore.core.errors import ConfigError, FrontierError, UsageError
from sitelore.core.guard import redact_url
from sitelore.core.models import SkipReason

__all__ = [
    "Completion",
    "CrawlStatus",
    "Finished",
    "Lease",
    "NewCrawl",
    "Outcome",
    "RedisFrontier",
    "Stat",
    "Wait",
]

log = logging.getLogger(__name__)

_MIN_VERSION = (7, 0)
_MIN_INTSET_ENTRIES = 256


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NewCrawl:
    """What ``create`` needs to start a crawl: the seed, the settings snapshot, timings."""

    crawl_id: str
    seed: FrontierItem
    meta: Mapping[str, str]
    deadline_seconds: float
    seed_delay_ms: int
    robots_json: str | None = None
    robots_ttl_ms: int = 86_400_000


@dataclasses.dataclass(frozen=True, slots=True)
class Lease:
    """One URL handed to one worker; its origin is held until ``complete``."""

    lease_id: str
    item: FrontierItem
    now_ms: int
    deadline_ms: int


@dataclasses.dataclass(frozen=True, slots=True)
class Wait:
    """Nothing may start now; ask again in about ``ms`` milliseconds."""

    ms: int


@dataclasses.dataclass(frozen=True, slots=True)
class Finished:
    """The crawl is over; ``reason`` is ``"max_pages"``, ``"deadline"`` or ``""``."""

    reason: str


class Outcome(enum.StrEnum):
    """How a leased URL ended, as ``_scripts.COMPLETE`` reads it."""

    DONE = "done"  #: a request was made
    RETRY = "retry"  #: it failed for now: try again (attempt + 1), or give it up
    REQUEUE = "requeue"  #: robots.txt was fetched instead: back untouched
    SKIP = "skip"  #: no request was made: the page slot comes back


class Stat(enum.StrEnum):
    """Counters a completion adds to a crawl's ``stats`` (the scripts add others)."""

    FETCHED = "fetched"
    INDEXED = "indexed"
    ERRORS = "errors"
    RETRIED = "retried"
    REDIRECTED = "redirected"
    SITEMAP_URLS = "sitemap_urls"

    @staticmethod
    def skipped(reason: SkipReason) -> str:
        """The counter of URLs skipped for ``reason`` (``skipped_robots``, ...)."""
        return f"skipped_{reason}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """How a leased URL ended, and what it discovered (see ``_scripts.COMPLETE``)."""

    outcome: Outcome
    delay_ms: int = -1
    backoff_ms: int = 0
    error: str = ""
    #: ``kind\turl``: what an incremental crawl's page changed (for its report).
    change: str = ""
    stats: Mapping[str, int] = dataclasses.field(default_factory=dict)
    links: Sequence[FrontierItem] = ()


#: The most warning lines a crawl keeps in Redis.
MAX_WARNINGS = 50
# A line once, while fewer than the cap are kept (LPOS: Redis 6.0.6+; 7 is required).
_WARN = """
if redis.call('LPOS', KEYS[1], ARGV[1]) == false
    and redis.call('LLEN', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('RPUSH', KEYS[1], ARGV[1])
end
return 0
"""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CrawlStatus:
    """A crawl's progress as Redis holds it."""

    crawl_id: str
    meta: dict[str, str]
    stats: dict[str, int]
    ready_hosts: int
    leases: int
    workers_alive: int
    errors: list[str]
    dead: int
    #: The crawl's first warnings (blocked or unreadable origins...), each once.
    warnings: list[str] = dataclasses.field(default_factory=list)


def _packed(stats: Mapping[str, int], links: Sequence[FrontierItem], buckets: int) -> list[Any]:
    """Counters then queue items, as ``COMPLETE`` and ``ADD`` read them."""
    args: list[Any] = [len(stats)]
    for name, increment in stats.items():
        args += [name, increment]
    args.append(len(links))
    for link in links:
        fp, bucket = fingerprint(link.url, buckets)
        host, item = link.encode()
        args += [fp, bucket, host, item]
    return args


def _split_namespace(url: str) -> tuple[str, str]:
    """Take sitelore's own ``namespace`` query parameter out of a redis:// URL."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    namespace = next((value for key, value in reversed(query) if key == "namespace"), "sl")
    kept = [(key, value) for key, value in query if key != "namespace"]
    if not namespace or any(ch in namespace for ch in "{}: \t\n"):
        raise UsageError(
            f"{redact_url(url)}: namespace {namespace!r} may not be empty or hold {{}}:"
        )
    return urlunsplit(parts._replace(query=urlencode(kept))), namespace


class RedisFrontier:
    """The shared frontier of every crawl in one Redis namespace.

    ::

        frontier = await RedisFrontier.connect("redis://127.0.0.1:6379/0")
        lease = await frontier.lease(crawl_id, worker_id, ttl_ms=5000, poll_ms=250)
        ...
        await frontier.aclose()

    ``?namespace=NAME`` in the URL (default ``sl``) prefixes every key, so several
    deployments (or tests) can share one Redis.
    """

    def __init__(self, client: aioredis.Redis, *, namespace: str = "sl", shown: str = "") -> None:
        self._redis = client
        self.namespace = namespace
        self.shown = shown or "redis"
        self._active = f"{namespace}:active"
        #: Prefix of the keys every crawl of the namespace shares per origin.
        self._origins = f"{namespace}:origin"
        self._scripts = {
            name: client.register_script(getattr(_scripts, name))
            for name in ("CREATE", "LEASE", "COMPLETE", "HEARTBEAT", "REAP", "ADD")
        }

    @classmethod
    async def connect(cls, url: str) -> RedisFrontier:
        """Connect and check the server; ConfigError names what is wrong (never a password)."""
        shown = redact_url(url)
        if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise UsageError(f"{shown}: the frontier must be a redis:// URL")
        plain, namespace = _split_namespace(url)
        try:
            client = aioredis.Redis.from_url(
                plain, decode_responses=True, socket_connect_timeout=5, health_check_interval=30
            )
        except ValueError as exc:
            raise ConfigError(f"{shown}: not a usable Redis URL: {exc}") from exc
        frontier = cls(client, namespace=namespace, shown=shown)
        try:
            await frontier.check()
        except BaseException:
            await frontier.aclose()
            raise
        return frontier

    async def check(self) -> None:
        """Refuse a server that is unreachable, older than 7.0, or allowed to evict keys."""
        try:
            server = await self._redis.info("server")
            memory = await self._redis.info("memory")
        except RedisError as exc:
            raise ConfigError(f"{self.shown}: cannot connect to Redis: {exc}") from exc
        version = str(server.get("redis_version", "0"))
        if tuple(int(part) for part in version.split(".")[:2] if part.isdigit()) < _MIN_VERSION:
            raise ConfigError(f"{self.shown}: Redis {version} is too old; 7.0 or newer is needed")
        policy = str(memory.get("maxmemory_policy", "noeviction"))
        if policy != "noeviction":
            raise ConfigError(
                f"{self.shown}: maxmemory-policy is {policy!r}; the frontier needs 'noeviction' "
                "(any eviction silently deletes queued URLs): set it in redis.conf or "
                "with CONFIG SET maxmemory-policy noeviction"
            )
        try:
            entries = await self._redis.config_get("set-max-intset-entries")
        except RedisError:  # CONFIG may be disabled (managed Redis): only a memory hint
            return
        value = int(entries.get("set-max-intset-entries") or _MIN_INTSET_ENTRIES)
        if value < _MIN_INTSET_ENTRIES:
            log.warning(
                "%s: set-max-intset-entries is %d; seen-sets take ~10x the memory (want >= %d)",
                self.shown,
                value,
                _MIN_INTSET_ENTRIES,
            )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()

    def prefix(self, crawl_id: str) -> str:
        """Every key of crawl ``crawl_id`` starts with this (one Redis Cluster hash slot)."""
        return f"{self.namespace}:{{{crawl_id}}}"

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except ResponseError as exc:
            raise FrontierError(f"{self.shown}: {action} failed: {exc}") from exc
        except RedisError as exc:
            raise FrontierError(f"{self.shown}: {action}: Redis unavailable: {exc}") from exc

    async def _run(self, name: str, crawl_id: str, args: Sequence[Any]) -> Any:
        with self._errors(name.lower()):
            keys = [self.prefix(crawl_id), self._origins]
            return await self._scripts[name](keys=keys, args=list(args))

    # -- crawls ---------------------------------------------------------------------------

    async def create(self, crawl: NewCrawl) -> tuple[int, int]:
        """Start ``crawl`` with its seed queued; returns (created_ms, deadline_ms)."""
        buckets = int(crawl.meta["buckets"])
        fp, bucket = fingerprint(crawl.seed.url, buckets)
        host, item = crawl.seed.encode()
        fields = [value for pair in crawl.meta.items() for value in pair]
        args: list[Any] = [
            crawl.deadline_seconds,
            crawl.robots_json or "",
            crawl.robots_ttl_ms,
            host,
            crawl.seed_delay_ms,
            len(crawl.meta),
            *fields,
            fp,
            bucket,
            host,
            item,
        ]
        created, deadline = await self._run("CREATE", crawl.crawl_id, args)
        with self._errors("register crawl"):
            await self._redis.sadd(self._active, crawl.crawl_id)
        return int(created), int(deadline)

    async def active_crawls(self) -> list[str]:
        """Ids of crawls not yet known to be finished, oldest id first."""
        with self._errors("list crawls"):
            members = await self._redis.smembers(self._active)
        return sorted(str(member) for member in members)

    async def deactivate(self, crawl_id: str) -> None:
        """Forget that ``crawl_id`` may have work (called once it is finished)."""
        with self._errors("deactivate"):
            await self._redis.srem(self._active, crawl_id)

    async def meta(self, crawl_id: str) -> dict[str, str]:
        """The crawl's settings snapshot and state; empty when there is no such crawl."""
        with self._errors("read crawl"):
            found = await self._redis.hgetall(self.prefix(crawl_id) + ":meta")
        return {str(key): str(value) for key, value in found.items()}

    async def server_time_ms(self) -> int:
        """Redis's clock in milliseconds (the one clock every script uses)."""
        with self._errors("read time"):
            seconds, micros = await self._redis.time()
        return int(seconds) * 1000 + int(micros) // 1000

    # -- the work loop --------------------------------------------------------------------

    async def lease(
        self, crawl_id: str, worker: str, *, ttl_ms: int, poll_ms: int
    ) -> Lease | Wait | Finished:
        """Take the next due URL (holding its origin), or say how long to wait."""
        reply = await self._run("LEASE", crawl_id, [worker, ttl_ms, poll_ms])
        kind = reply[0]
        if kind == "lease":
            _, lease_id, host, item, now, deadline = reply
            return Lease(str(lease_id), decode_item(str(host), str(item)), int(now), int(deadline))
        if kind == "wait":
            return Wait(max(0, int(reply[1])))
        return Finished(str(reply[1]))

    async def complete(
        self, crawl_id: str, worker: str, lease_id: str, completion: Completion, buckets: int
    ) -> tuple[bool, int]:
        """Ack a lease and queue its links in one call; returns (acked, links added)."""
        args: list[Any] = [
            worker,
            lease_id,
            completion.outcome,
            completion.delay_ms,
            completion.backoff_ms,
            completion.error,
            completion.change,
        ]
        args += _packed(completion.stats, completion.links, buckets)
        acked, added = await self._run("COMPLETE", crawl_id, args)
        return bool(acked), int(added)

    async def add(
        self,
        crawl_id: str,
        links: Sequence[FrontierItem],
        stats: Mapping[str, int],
        buckets: int,
    ) -> int:
        """Queue URLs found without a lease (a seed's sitemaps); returns how many were new."""
        return int(await self._run("ADD", crawl_id, _packed(stats, links, buckets)))

    async def heartbeat(self, crawl_id: str, worker: str, *, ttl_ms: int) -> int:
        """Say this worker is alive and extend its leases; -1 once the crawl is over."""
        return int(await self._run("HEARTBEAT", crawl_id, [worker, ttl_ms]))

    async def reap(
        self, crawl_id: str, *, heartbeat_timeout_ms: int, max_attempts: int
    ) -> tuple[int, int]:
        """Requeue the leases of silent workers; returns (reclaimed, given up)."""
        reclaimed, dead = await self._run("REAP", crawl_id, [heartbeat_timeout_ms, max_attempts])
        return int(reclaimed), int(dead)

    async def robots(self, crawl_id: str, host: str) -> str | None:
        """The robots rules (JSON) of origin ``host`` any crawl of the namespace stored."""
        with self._errors("read robots"):
            value = await self._redis.get(f"{self._origins}:robots:{host}")
        return None if value is None else str(value)

    async def save_robots(self, crawl_id: str, host: str, rules_json: str, ttl_ms: int) -> None:
        """Share the robots rules of origin ``host`` for ``ttl_ms``; count the fetch."""
        with self._errors("save robots"):
            await self._redis.set(f"{self._origins}:robots:{host}", rules_json, px=max(1, ttl_ms))
            await self._redis.hincrby(f"{self.prefix(crawl_id)}:stats", "robots_fetched", 1)

    async def throttled(self, crawl_id: str, host: str) -> str | None:
        """Why origin ``host`` may get no more requests in this crawl, or None."""
        with self._errors("read throttles"):
            value = await self._redis.hget(f"{self.prefix(crawl_id)}:throttled", host)
        return None if value is None else str(value)

    async def throttle(self, crawl_id: str, host: str, reason: str) -> None:
        """Stop every worker's requests to origin ``host`` for the rest of the crawl."""
        with self._errors("save throttle"):
            await self._redis.hsetnx(f"{self.prefix(crawl_id)}:throttled", host, reason)

    async def claim(self, crawl_id: str, key: str, url: str) -> str:
        """Claim document ``key`` for ``url`` in this crawl; the URL holding it (first wins)."""
        name = f"{self.prefix(crawl_id)}:twins"
        with self._errors("claim a document"):
            if await self._redis.hsetnx(name, key, url):
                return url
            owner = await self._redis.hget(name, key)
        return url if owner is None else str(owner)

    # -- reading progress -----------------------------------------------------------------

    async def status(self, crawl_id: str, *, heartbeat_timeout_ms: int = 5000) -> CrawlStatus:
        """Progress of ``crawl_id`` (raises NotFound-style UsageError for an unknown id)."""
        key = self.prefix(crawl_id)
        now_ms = await self.server_time_ms()
        with self._errors("read status"):
            redis = self._redis
            meta = await redis.hgetall(f"{key}:meta")
            stats = await redis.hgetall(f"{key}:stats")
            hosts = await redis.zcard(f"{key}:hosts")
            leases = await redis.zcard(f"{key}:leases")
            beats: list[Any] = await redis.zrange(f"{key}:workers", 0, -1, withscores=True)
            errors = await redis.lrange(f"{key}:errors", 0, 9)
            dead = await redis.llen(f"{key}:dead")
            warnings = await redis.lrange(f"{key}:warnings", 0, -1)
        alive = sum(1 for beat in beats if now_ms - int(beat[1]) <= heartbeat_timeout_ms)
        return CrawlStatus(
            crawl_id=crawl_id,
            meta={str(k): str(v) for k, v in meta.items()},
            stats={str(k): int(v) for k, v in stats.items()},
            ready_hosts=int(hosts),
            leases=int(leases),
            workers_alive=alive,
            errors=[str(e) for e in errors],
            dead=int(dead),
            warnings=[str(w) for w in warnings],
        )

    async def warn(self, crawl_id: str, line: str) -> None:
        """Keep ``line`` among the crawl's warnings: once, and only the first
        :data:`MAX_WARNINGS` (every worker may say the same thing)."""
        with self._errors("save warning"):
            await self._redis.eval(
                _WARN, 1, f"{self.prefix(crawl_id)}:warnings", line, MAX_WARNINGS
            )

    async def changes(self, crawl_id: str) -> list[tuple[str, str]]:
        """An incremental crawl's pages as ``(change kind, URL)``, in completion order."""
        with self._errors("read changes"):
            lines = await self._redis.lrange(f"{self.prefix(crawl_id)}:changes", 0, -1)
        pairs = (str(line).partition("\t") for line in lines)
        return [(kind, url) for kind, _, url in pairs]
