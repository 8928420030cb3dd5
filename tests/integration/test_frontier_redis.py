"""The Redis frontier's scripts on a real Redis: leases, politeness, dedup, budget, reclaim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.scale_support import (
    REDIS,
    crawl_keys,
    delete_namespace,
    fresh_frontier,
    held_urls,
    namespace_url,
    require_redis,
)

from sitelore.adapters.frontier_redis import (
    Completion,
    Finished,
    FrontierItem,
    Lease,
    NewCrawl,
    Outcome,
    RedisFrontier,
    Wait,
)
from sitelore.core.errors import ConfigError, UsageError

CRAWL = "c1"


@pytest.fixture
async def frontier() -> AsyncIterator[RedisFrontier]:
    async with fresh_frontier() as (_, client):
        yield client


@pytest.fixture
async def raw() -> AsyncIterator[aioredis.Redis]:
    require_redis()
    client = aioredis.Redis.from_url(REDIS, decode_responses=True)
    yield client
    await client.aclose()


async def create(
    frontier: RedisFrontier,
    *,
    seed: str = "http://a.test/",
    pages: int = 100,
    delay_ms: int = 0,
    deadline: float = 600.0,
    crawl: str = CRAWL,
    max_attempts: int = 0,
) -> None:
    meta = {"buckets": "4", "pages_left": str(pages), "delay_ms": str(delay_ms)}
    if max_attempts:
        meta["max_attempts"] = str(max_attempts)
    await frontier.create(
        NewCrawl(
            crawl_id=crawl,
            seed=FrontierItem(seed, 0),
            meta=meta,
            deadline_seconds=deadline,
            seed_delay_ms=delay_ms,
        )
    )


async def lease(frontier: RedisFrontier, worker: str = "w1", ttl_ms: int = 60_000) -> Any:
    return await frontier.lease(CRAWL, worker, ttl_ms=ttl_ms, poll_ms=100)


async def complete(
    frontier: RedisFrontier, worker: str, lease_id: str, **fields: Any
) -> tuple[bool, int]:
    links = tuple(FrontierItem(url, 1) for url in fields.pop("urls", ()))
    return await frontier.complete(
        CRAWL, worker, lease_id, Completion(outcome=Outcome.DONE, links=links, **fields), 4
    )


async def host_state(raw: aioredis.Redis, frontier: RedisFrontier, host: str) -> dict[str, str]:
    key = f"{frontier.prefix(CRAWL)}:h:{host}"
    return {str(k): str(v) for k, v in (await raw.hgetall(key)).items()}


async def redis_ms(raw: aioredis.Redis) -> int:
    seconds, micros = await raw.time()
    return int(seconds) * 1000 + int(micros) // 1000


# -- leasing -----------------------------------------------------------------------------


async def test_one_lease_per_origin_at_a_time(frontier: RedisFrontier) -> None:
    await create(frontier)
    seed = await lease(frontier)
    assert isinstance(seed, Lease)
    assert seed.item == FrontierItem("http://a.test/", 0)
    await complete(
        frontier,
        "w1",
        seed.lease_id,
        urls=["http://a.test/x", "http://a.test/y", "http://b.test/z"],
    )

    first, second, third = [await lease(frontier, w) for w in ("w1", "w2", "w3")]

    assert isinstance(first, Lease)
    assert isinstance(second, Lease)
    assert {first.item.url.split("/")[2], second.item.url.split("/")[2]} == {"a.test", "b.test"}
    assert isinstance(third, Wait)  # a.test has another URL, but its origin is held


async def test_links_already_seen_are_not_queued_again(frontier: RedisFrontier) -> None:
    await create(frontier)
    seed = await lease(frontier)

    acked, added = await complete(
        frontier,
        "w1",
        seed.lease_id,
        urls=["http://a.test/x", "http://a.test/x", "http://a.test/", "http://b.test/"],
    )

    assert (acked, added) == (True, 2)
    status = await frontier.status(CRAWL)
    assert status.stats["skipped_duplicate"] == 2
    assert status.meta["queued"] == "2"


async def test_an_origin_waits_its_delay_after_each_request(
    frontier: RedisFrontier, raw: aioredis.Redis
) -> None:
    await create(frontier, delay_ms=200)
    await asyncio.sleep(0.25)  # the seed origin is not due before the delay
    seed = await lease(frontier)
    before = await redis_ms(raw)
    await complete(frontier, "w1", seed.lease_id, urls=["http://a.test/x"])
    after = await redis_ms(raw)

    nxt = int((await host_state(raw, frontier, "http://a.test"))["next"])
    reply = await lease(frontier, "w2")

    assert before + 200 <= nxt <= after + 200
    assert isinstance(reply, Wait)
    assert 0 < reply.ms <= 200


async def test_a_crawl_delay_and_a_backoff_push_the_origin_further(
    frontier: RedisFrontier, raw: aioredis.Redis
) -> None:
    await create(frontier, delay_ms=10)
    seed = await lease(frontier)
    before = await redis_ms(raw)
    await complete(frontier, "w1", seed.lease_id, delay_ms=500, urls=["http://a.test/x"])
    assert int((await host_state(raw, frontier, "http://a.test"))["next"]) >= before + 500

    await raw.zadd(f"{frontier.prefix(CRAWL)}:hosts", {"http://a.test": 0})  # due again now
    await raw.hset(f"{frontier.namespace}:origin:http://a.test", "next", 0)  # for every crawl
    page = await lease(frontier)
    before = await redis_ms(raw)
    await frontier.complete(
        CRAWL, "w1", page.lease_id, Completion(outcome=Outcome.RETRY, backoff_ms=2000), 4
    )
    state = await host_state(raw, frontier, "http://a.test")
    again = await lease(frontier)

    assert int(state["next"]) >= before + 2000
    assert state["delay"] == "500"
    assert isinstance(again, Wait)


async def test_a_retry_goes_back_to_the_head_with_one_more_attempt_and_its_slot(
    frontier: RedisFrontier, raw: aioredis.Redis
) -> None:
    await create(frontier, pages=2)
    seed = await lease(frontier)
    await complete(frontier, "w1", seed.lease_id, urls=["http://a.test/x", "http://a.test/y"])
    x = await lease(frontier)
    assert x.item.url == "http://a.test/x"

    await frontier.complete(CRAWL, "w1", x.lease_id, Completion(outcome=Outcome.RETRY), 4)
    again = await lease(frontier)

    assert again.item == FrontierItem("http://a.test/x", 1, attempt=1)
    assert (await frontier.meta(CRAWL))["pages_left"] == "0"


async def test_a_skip_hands_the_slot_back_and_adds_no_delay(
    frontier: RedisFrontier, raw: aioredis.Redis
) -> None:
    await create(frontier, delay_ms=60_000)
    seed = await lease(frontier)
    left = (await frontier.meta(CRAWL))["pages_left"]

    await frontier.complete(
        CRAWL,
        "w1",
        seed.lease_id,
        Completion(outcome=Outcome.SKIP, links=(FrontierItem("http://a.test/x", 1),)),
        4,
    )

    assert int((await frontier.meta(CRAWL))["pages_left"]) == int(left) + 1
    assert isinstance(await lease(frontier), Lease)  # due at once: no request was made


async def test_a_requeue_puts_the_url_back_as_it_was(frontier: RedisFrontier) -> None:
    await create(frontier)
    seed = await lease(frontier)

    await frontier.complete(CRAWL, "w1", seed.lease_id, Completion(outcome=Outcome.REQUEUE), 4)
    again = await lease(frontier)

    assert again.item == seed.item


# -- the end of a crawl --------------------------------------------------------------------


async def test_the_page_budget_ends_the_crawl_and_clears_the_frontier(
    frontier: RedisFrontier,
) -> None:
    await create(frontier, pages=2)
    seed = await lease(frontier)
    await complete(frontier, "w1", seed.lease_id, urls=["http://a.test/x", "http://b.test/y"])
    second = await lease(frontier)
    await complete(frontier, "w1", second.lease_id)

    end = await lease(frontier)

    assert end == Finished("max_pages")
    meta = await frontier.meta(CRAWL)
    assert (meta["state"], meta["unfetched"]) == ("finished", "1")
    left = {key.rsplit(":", 1)[-1] for key in await crawl_keys(frontier, CRAWL)}
    assert left <= {"meta", "stats", "errors", "dead"}


async def test_the_deadline_ends_the_crawl(frontier: RedisFrontier) -> None:
    await create(frontier, deadline=0.0)

    assert await lease(frontier) == Finished("deadline")
    assert await frontier.heartbeat(CRAWL, "w1", ttl_ms=1000) == -1


async def test_a_crawl_with_nothing_left_finishes_without_truncation(
    frontier: RedisFrontier,
) -> None:
    await create(frontier)
    seed = await lease(frontier)
    assert isinstance(await lease(frontier, "w2"), Wait)  # the seed is in flight
    await complete(frontier, "w1", seed.lease_id)

    assert await lease(frontier, "w2") == Finished("")
    assert CRAWL in await frontier.active_crawls()  # the worker that sees the end deactivates
    await frontier.deactivate(CRAWL)
    assert CRAWL not in await frontier.active_crawls()


# -- dead workers --------------------------------------------------------------------------


async def test_a_silent_workers_lease_comes_back_and_its_late_ack_is_stale(
    frontier: RedisFrontier,
) -> None:
    await create(frontier)
    taken = await lease(frontier, "w1")
    assert await held_urls(frontier, CRAWL, "w1") == ["http://a.test/"]

    reclaimed = await frontier.reap(CRAWL, heartbeat_timeout_ms=0, max_attempts=3)
    again = await lease(frontier, "w2")
    acked, _ = await complete(frontier, "w1", taken.lease_id)

    assert reclaimed == (1, 0)
    assert again.item == FrontierItem("http://a.test/", 0, attempt=1)
    assert acked is False
    status = await frontier.status(CRAWL)
    assert (status.stats["reclaimed"], status.stats["stale_acks"]) == (1, 1)
    assert await held_urls(frontier, CRAWL, "w1") == []


async def test_heartbeats_keep_leases_and_expired_leases_are_reclaimed(
    frontier: RedisFrontier,
) -> None:
    await create(frontier, seed="http://a.test/")
    seed = await lease(frontier, "w1", ttl_ms=60_000)
    await complete(frontier, "w1", seed.lease_id, urls=["http://b.test/"])
    kept = await lease(frontier, "w1", ttl_ms=60_000)
    assert isinstance(kept, Lease)

    assert await frontier.heartbeat(CRAWL, "w1", ttl_ms=60_000) == 1
    assert await frontier.reap(CRAWL, heartbeat_timeout_ms=60_000, max_attempts=3) == (0, 0)
    assert await frontier.heartbeat(CRAWL, "w1", ttl_ms=0) == 1  # now its deadline has passed
    assert await frontier.reap(CRAWL, heartbeat_timeout_ms=60_000, max_attempts=3) == (1, 0)


async def test_a_url_reclaimed_too_often_is_given_up(frontier: RedisFrontier) -> None:
    await create(frontier)
    await lease(frontier, "w1")

    assert await frontier.reap(CRAWL, heartbeat_timeout_ms=0, max_attempts=1) == (0, 1)
    status = await frontier.status(CRAWL)
    assert status.dead == 1
    assert await lease(frontier, "w2") == Finished("")


async def test_a_retry_on_the_last_attempt_gives_the_url_up(frontier: RedisFrontier) -> None:
    await create(frontier, max_attempts=2)
    first = await lease(frontier)
    await frontier.complete(CRAWL, "w1", first.lease_id, Completion(outcome=Outcome.RETRY), 4)
    second = await lease(frontier)
    assert second.item.attempt == 1

    await frontier.complete(CRAWL, "w1", second.lease_id, Completion(outcome=Outcome.RETRY), 4)

    assert (await frontier.status(CRAWL)).dead == 1
    assert await lease(frontier) == Finished("")


async def test_a_crawl_that_is_not_in_redis_is_reported_missing(
    frontier: RedisFrontier,
) -> None:
    assert await lease(frontier) == Finished("missing")


# -- robots, status, start-up checks --------------------------------------------------------


async def test_robots_rules_are_shared_between_workers(frontier: RedisFrontier) -> None:
    await create(frontier)
    assert await frontier.robots(CRAWL, "http://a.test") is None

    await frontier.save_robots(CRAWL, "http://a.test", '{"x": 1}', 60_000)

    assert await frontier.robots(CRAWL, "http://a.test") == '{"x": 1}'
    assert (await frontier.status(CRAWL)).stats["robots_fetched"] == 1


async def test_throttles_are_shared_and_the_first_reason_stays(frontier: RedisFrontier) -> None:
    await create(frontier)
    assert await frontier.throttled(CRAWL, "http://a.test") is None

    await frontier.throttle(CRAWL, "http://a.test", "Retry-After 86400s")
    await frontier.throttle(CRAWL, "http://a.test", "Crawl-delay")

    assert await frontier.throttled(CRAWL, "http://a.test") == "Retry-After 86400s"
    assert await frontier.throttled(CRAWL, "http://b.test") is None
    assert [key for key in await crawl_keys(frontier, CRAWL) if key.endswith(":throttled")]


async def test_creating_a_crawl_twice_is_refused(frontier: RedisFrontier) -> None:
    await create(frontier)
    with pytest.raises(Exception, match="crawl exists"):
        await create(frontier)


async def test_an_unreachable_redis_is_a_config_error_without_the_password() -> None:
    with pytest.raises(ConfigError, match="cannot connect") as caught:
        await RedisFrontier.connect("redis://:hunter2@127.0.0.1:1/0")
    assert "hunter2" not in str(caught.value)
    assert "127.0.0.1:1" in str(caught.value)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:6379/", "redis://127.0.0.1:6379/0?namespace=a:b"]
)
async def test_frontier_urls_are_checked(url: str) -> None:
    with pytest.raises(UsageError):
        await RedisFrontier.connect(url)


class _FakeRedis:
    """Answers INFO like a server with the given settings; nothing else is called."""

    def __init__(self, info: Mapping[str, Mapping[str, str]]) -> None:
        self._info = info
        self.closed = False

    def register_script(self, script: str) -> object:
        return script

    async def info(self, section: str) -> Mapping[str, str]:
        return self._info[section]

    async def config_get(self, name: str) -> Mapping[str, str]:
        return {name: "512"}

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("server", "memory", "message"),
    [
        ({"redis_version": "7.0.15"}, {"maxmemory_policy": "allkeys-lru"}, "noeviction"),
        ({"redis_version": "7.0.15"}, {"maxmemory_policy": "volatile-ttl"}, "noeviction"),
        ({"redis_version": "6.2.14"}, {"maxmemory_policy": "noeviction"}, "too old"),
    ],
)
async def test_a_server_that_could_lose_the_frontier_is_refused(
    server: dict[str, str], memory: dict[str, str], message: str
) -> None:
    fake = _FakeRedis({"server": server, "memory": memory})
    frontier = RedisFrontier(fake, shown="redis://db.example:6379/0")  # type: ignore[arg-type]

    with pytest.raises(ConfigError, match=message):
        await frontier.check()


async def test_the_real_server_passes_the_checks(frontier: RedisFrontier) -> None:
    await frontier.check()
    assert await frontier.server_time_ms() > 0


# -- the invariant under random interleavings ----------------------------------------------

_URLS = [f"http://{host}.test/{path}" for host in "abc" for path in ("", "1", "2", "3")]
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("links"), st.lists(st.sampled_from(_URLS), max_size=4)),
        st.tuples(st.just("lease"), st.sampled_from(["w1", "w2", "w3"])),
        st.tuples(
            st.just("complete"),
            st.integers(0, 5),
            st.sampled_from(["done", "retry", "requeue", "skip"]),
            st.lists(st.sampled_from(_URLS), max_size=3),
        ),
        st.tuples(st.just("heartbeat"), st.sampled_from(["w1", "w2", "w3"])),
        st.tuples(st.just("reap")),
    ),
    max_size=25,
)


async def _check_invariant(raw: aioredis.Redis, frontier: RedisFrontier) -> None:
    """An origin is ready exactly when it has queued items and no lease; leases agree."""
    prefix = frontier.prefix(CRAWL)
    if await raw.hget(f"{prefix}:meta", "state") != "running":
        return
    inflight = {str(k): str(v) for k, v in (await raw.hgetall(f"{prefix}:inflight")).items()}
    leased_hosts = [record.split("\t", 1)[0] for record in inflight.values()]
    assert len(leased_hosts) == len(set(leased_hosts))  # at most one lease per origin
    assert await raw.zcard(f"{prefix}:leases") == len(inflight)
    queued = 0
    for member in await raw.smembers(f"{prefix}:hostset"):
        host = str(member)
        lengths = [await raw.llen(f"{prefix}:q:{host}:{b}") for b in range(8)]
        queued += sum(lengths)
        ready = await raw.zscore(f"{prefix}:hosts", host) is not None
        held = await raw.hget(f"{prefix}:h:{host}", "inflight") == "1"
        assert held == (host in leased_hosts)
        assert ready == (sum(lengths) > 0 and not held), host
    assert int(await raw.hget(f"{prefix}:meta", "queued") or 0) == queued


async def _interleave(ops: list[tuple[Any, ...]]) -> None:
    url, namespace = namespace_url()
    frontier = await RedisFrontier.connect(url)
    raw = aioredis.Redis.from_url(REDIS, decode_responses=True)
    held: list[tuple[str, str]] = []
    try:
        await create(frontier, pages=1000)
        for op in ops:
            if op[0] == "links":
                links = tuple(FrontierItem(u, 1) for u in op[1])
                await frontier.complete(
                    CRAWL, "x", "x:0", Completion(outcome=Outcome.DONE, links=links), 4
                )
            elif op[0] == "lease":
                reply = await lease(frontier, op[1])
                if isinstance(reply, Lease):
                    held.append((op[1], reply.lease_id))
            elif op[0] == "complete" and held:
                worker, lease_id = held.pop(op[1] % len(held))
                links = tuple(FrontierItem(u, 1) for u in op[3])
                await frontier.complete(
                    CRAWL, worker, lease_id, Completion(outcome=op[2], links=links), 4
                )
            elif op[0] == "heartbeat":
                await frontier.heartbeat(CRAWL, op[1], ttl_ms=60_000)
            elif op[0] == "reap":
                await frontier.reap(CRAWL, heartbeat_timeout_ms=0, max_attempts=100)
            await _check_invariant(raw, frontier)
    finally:
        await raw.aclose()
        await frontier.aclose()
        await delete_namespace(namespace)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_OPS)
def test_random_interleavings_keep_the_ready_set_invariant(ops: list[tuple[Any, ...]]) -> None:
    asyncio.run(_interleave(ops))
