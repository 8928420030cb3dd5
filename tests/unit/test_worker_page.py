"""How a worker turns one leased URL into a Completion (the page pipeline + the Redis adapter).

On fakes: no Redis, no network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from email.utils import format_datetime

import pytest
from tests.fakes import FakeClock, FakeFetcher, Route

from sitelore.adapters.frontier_redis import Completion, FrontierItem, Lease, Outcome
from sitelore.adapters.store import MEMORY, SQLiteStore
from sitelore.app.worker import SharedRobots, rules_from_json, rules_to_json
from sitelore.app.worker._leases import LinkFilter, RedisLease, completion_of
from sitelore.core.convert import DocumentConverter
from sitelore.core.errors import BlockedURLError, NetworkError
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.robots import RobotsRules, is_allowed, parse_robots_txt
from sitelore.core.urls import Scope
from sitelore.crawl.page import PagePipeline
from sitelore.crawl.revisit import Revisit

SEED = "https://docs.test/"


class Shelf:
    """Robots rules shared in a dict (Redis in production)."""

    def __init__(self) -> None:
        self.saved: dict[str, str] = {}
        self.throttles: dict[str, str] = {}

    async def robots(self, crawl_id: str, host: str) -> str | None:
        return self.saved.get(host)

    async def save_robots(self, crawl_id: str, host: str, rules_json: str, ttl_ms: int) -> None:
        self.saved[host] = rules_json

    async def throttled(self, crawl_id: str, host: str) -> str | None:
        return self.throttles.get(host)

    async def throttle(self, crawl_id: str, host: str, reason: str) -> None:
        self.throttles.setdefault(host, reason)


def html(*links: str) -> str:
    anchors = "".join(f'<a href="{href}">x</a>' for href in links)
    return (
        f"<html><head><title>T</title></head><body><main><p>Text.</p>{anchors}</main></body></html>"
    )


class World:
    def __init__(self, pages: Mapping[str, Route]) -> None:
        self.site = FakeFetcher(pages)
        self.shelf = Shelf()
        self.loads: list[str] = []
        self.robots_text = "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"
        self.blocked: set[str] = set()

    async def load(self, origin: str) -> RobotsRules:
        self.loads.append(origin)
        return parse_robots_txt(self.robots_text)

    def check(self, url: str) -> object:
        if url in self.blocked:
            raise BlockedURLError(url, "test says no")
        return url


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(MEMORY)
    yield opened
    await opened.close()


class Processor:
    """One worker's view of a crawl: the page pipeline, then the ack it would send."""

    def __init__(self, world: World, store: SQLiteStore, crawl: CrawlOptions) -> None:
        self.clock = FakeClock()
        self.robots = SharedRobots(world.shelf, "c", world.load, self.clock, ttl_ms=1000)
        scope = Scope.from_options(SEED, crawl)
        self.links = LinkFilter(crawl, scope)
        self.delay_ms = round(crawl.delay * 1000)
        self.claims: dict[str, str] = {}
        self.pipeline = PagePipeline(
            options=crawl,
            scope=scope,
            limits=Limits(max_redirects=2),
            fetcher=world.site,
            store=store,
            robots=self.robots,
            clock=self.clock,
            url_check=world.check,
            converter=DocumentConverter(),
            revisit=Revisit(store, self.clock, enabled=False),
            max_attempts=3,
        )

    async def claim(self, key: str, url: str) -> str:
        return self.claims.setdefault(key, url)

    async def process(self, leased: Lease, remaining: float = 60.0) -> Completion:
        timed = Lease(leased.lease_id, leased.item, 0, round(remaining * 1000))
        redis_lease = RedisLease(timed, self.robots, self.clock, self.claim)
        result = await self.pipeline.process(redis_lease)
        if result.throttle is not None:
            await self.robots.throttle(redis_lease.origin, result.throttle)
        return completion_of(result, redis_lease.item, self.links, self.delay_ms)


def processor(world: World, store: SQLiteStore, **options: object) -> Processor:
    crawl = CrawlOptions.model_validate({"delay": 0.5, "max_depth": 2, **options})
    return Processor(world, store, crawl)


def lease(url: str, depth: int = 1, attempt: int = 0, hops: int = 0) -> Lease:
    return Lease("w:1", FrontierItem(url, depth, attempt, hops), 0, 60_000)


async def robots_known(world: World, origin: str = "https://docs.test") -> None:
    world.shelf.saved[origin] = rules_to_json(parse_robots_txt(world.robots_text))


async def test_robots_txt_is_fetched_under_the_lease_and_the_url_goes_back(
    store: SQLiteStore,
) -> None:
    world = World({SEED + "a": Route(html())})
    page = processor(world, store)

    first = await page.process(lease(SEED + "a"), 30)
    second = await page.process(lease(SEED + "a"), 30)

    assert first == Completion(outcome=Outcome.REQUEUE, delay_ms=2000)
    assert world.loads == ["https://docs.test"]  # once: the rules are shared after that
    assert "https://docs.test" in world.shelf.saved
    assert second.outcome == "done"
    assert world.site.urls == [SEED + "a"]


async def test_a_disallowed_url_is_skipped_without_a_request(store: SQLiteStore) -> None:
    world = World({})
    await robots_known(world)

    done = await processor(world, store).process(lease(SEED + "private/x"), 30)

    assert done == Completion(outcome=Outcome.SKIP, delay_ms=2000, stats={"skipped_robots": 1})
    assert world.site.urls == []


async def test_a_url_the_guard_refuses_is_skipped(store: SQLiteStore) -> None:
    world = World({})
    world.blocked.add(SEED + "x")

    done = await processor(world, store).process(lease(SEED + "x"), 30)

    assert done == Completion(outcome=Outcome.SKIP, stats={"skipped_blocked": 1})


async def test_a_page_is_stored_and_its_links_queued_one_level_deeper(
    store: SQLiteStore,
) -> None:
    links = [SEED + "b", SEED + "b#frag", "https://elsewhere.test/", SEED + "c"]
    world = World({SEED + "a": Route(html(*links)), SEED + "d": Route(html(SEED + "b"))})
    await robots_known(world)
    page = processor(world, store)

    done = await page.process(lease(SEED + "a", depth=1), 30)
    again = await page.process(lease(SEED + "d", depth=1), 30)

    assert done.outcome == "done"
    assert done.delay_ms == 2000
    assert [link.url for link in done.links] == [SEED + "b", SEED + "c"]
    assert {link.depth for link in done.links} == {2}
    assert done.stats["indexed"] == 1
    assert done.stats["skipped_filtered"] == 1
    assert again.links == []  # this worker already sent b
    assert again.stats["skipped_duplicate"] == 1
    assert await store.get(SEED + "a") is not None


async def test_a_twin_of_a_stored_page_is_a_duplicate(store: SQLiteStore) -> None:
    """``/g/`` and ``/g/index.html`` with the same text: one document; the second is a
    ``duplicate`` that spent its request (acks ``done``); its links go as any page's."""
    body = Route(html(SEED + "g/intro.html"))
    world = World({SEED + "g/": body, SEED + "g/index.html": body})
    await robots_known(world)
    page = processor(world, store)

    first = await page.process(lease(SEED + "g/"), 30)
    second = await page.process(lease(SEED + "g/index.html"), 30)

    assert (first.outcome, first.stats) == ("done", {"fetched": 1, "indexed": 1})
    assert second.outcome == "done"
    assert second.stats == {"fetched": 1, "skipped_duplicate": 2}  # itself, and intro.html
    assert second.links == []  # this worker already sent intro.html
    assert [doc.url for doc in await store.list()] == [SEED + "g/"]


async def test_a_redirect_onto_a_twin_is_a_duplicate(store: SQLiteStore) -> None:
    """A redirect whose target is a twin of a stored page: fetched, not stored again."""
    body = Route(html())
    world = World({SEED + "g/": body, SEED + "g/index.htm": body})
    await robots_known(world)
    page = processor(world, store)

    await page.process(lease(SEED + "g/"), 30)
    hop = await page.process(lease(SEED + "g/index.htm", hops=1), 30)

    assert hop.outcome == "done"
    assert hop.stats == {"fetched": 1, "skipped_duplicate": 1}
    assert await store.count() == 1


async def test_links_past_the_depth_limit_are_counted_once(store: SQLiteStore) -> None:
    world = World(
        {
            SEED + "a": Route(html(SEED + "x", SEED + "x")),
            SEED + "b": Route(html(SEED + "x")),
        }
    )
    await robots_known(world)
    page = processor(world, store, max_depth=1)

    first = await page.process(lease(SEED + "a", depth=1), 30)
    second = await page.process(lease(SEED + "b", depth=1), 30)

    assert (first.links, first.stats["skipped_depth"]) == ([], 1)
    assert "skipped_depth" not in second.stats


async def test_a_redirect_queues_its_target_instead_of_following_it(store: SQLiteStore) -> None:
    world = World({SEED + "old": Route(redirect=SEED + "new")})
    await robots_known(world)

    done = await processor(world, store).process(lease(SEED + "old", depth=1), 30)

    assert done.outcome == "done"
    assert done.links == (FrontierItem(SEED + "new", 1, 0, 1),)
    assert done.stats == {"fetched": 1, "redirected": 1}
    assert await store.count() == 0


async def test_too_many_redirects_is_a_page_error(store: SQLiteStore) -> None:
    world = World({SEED + "loop": Route(redirect=SEED + "next")})
    await robots_known(world)

    done = await processor(world, store).process(lease(SEED + "loop", hops=2), 30)

    assert not done.links
    assert "too-many-redirects" in done.error


async def test_a_redirect_target_out_of_scope_is_stored_but_not_followed(
    store: SQLiteStore,
) -> None:
    world = World({"https://other.test/x": Route(html("https://other.test/y"))})
    await robots_known(world, "https://other.test")

    done = await processor(world, store).process(lease("https://other.test/x", hops=1), 30)

    assert done.stats["indexed"] == 1
    assert not done.links


async def test_a_429_is_retried_after_its_retry_after(store: SQLiteStore) -> None:
    world = World({SEED + "a": Route(status=429, headers={"retry-after": "7"})})
    await robots_known(world)
    page = processor(world, store)

    retry = await page.process(lease(SEED + "a"), 30)
    last = await page.process(lease(SEED + "a", attempt=2), 30)

    assert (retry.outcome, retry.backoff_ms, retry.stats) == ("retry", 7000, {"retried": 1})
    assert (last.outcome, last.backoff_ms) == ("done", 7000)
    assert "http-status" in last.error


async def test_a_retry_after_date_is_waited_for(store: SQLiteStore) -> None:
    when = format_datetime(FakeClock().now() + timedelta(seconds=12), usegmt=True)
    world = World({SEED + "a": Route(status=503, headers={"retry-after": when})})
    await robots_known(world)
    page = processor(world, store)

    retry = await page.process(lease(SEED + "a"), 30)

    assert (retry.outcome, retry.backoff_ms) == ("retry", 12000)


@pytest.mark.parametrize("status", [429, 502, 503, 504])
async def test_busy_statuses_without_retry_after_back_off_exponentially(
    store: SQLiteStore, status: int
) -> None:
    """From the origin's spacing (Crawl-delay 2), doubling, until ``max_attempts`` (3)."""
    world = World({SEED + "a": Route(status=status)})
    await robots_known(world)
    page = processor(world, store)

    first = await page.process(lease(SEED + "a"), 30)
    second = await page.process(lease(SEED + "a", attempt=1), 30)
    last = await page.process(lease(SEED + "a", attempt=2), 30)

    assert [(c.outcome, c.backoff_ms) for c in (first, second)] == [
        ("retry", 2000),
        ("retry", 4000),
    ]
    assert (last.outcome, last.backoff_ms) == ("done", 0)
    assert last.error.startswith(SEED + "a\thttp-status\t")


@pytest.mark.parametrize("status", [400, 401, 403, 410, 500])
async def test_other_statuses_are_final_even_with_a_retry_after(
    store: SQLiteStore, status: int
) -> None:
    world = World({SEED + "a": Route(status=status, headers={"retry-after": "1"})})
    await robots_known(world)
    page = processor(world, store)

    done = await page.process(lease(SEED + "a"), 30)

    assert (done.outcome, done.backoff_ms) == ("done", 0)
    assert done.error.startswith(SEED + "a\thttp-status\t")
    assert world.site.urls == [SEED + "a"]


@pytest.mark.parametrize(
    ("status", "retry_after", "remaining"),
    [
        pytest.param(503, "86400", 30, id="a-day"),
        pytest.param(429, "Wed, 01 Jan 2031 00:00:00 GMT", 30, id="date-years-away"),
        pytest.param(503, "20", 10, id="past-the-crawl-deadline"),
        pytest.param(503, "1e309", 30, id="too-large-for-a-float"),  # its ack: OverflowError
    ],
)
async def test_a_retry_after_the_crawl_cannot_wait_throttles_the_origin(
    store: SQLiteStore, status: int, retry_after: str, remaining: float
) -> None:
    """Not retried: the page fails, the origin is throttled for every worker."""
    world = World(
        {
            SEED + "a": Route(status=status, headers={"retry-after": retry_after}),
            SEED + "b": Route(html()),
        }
    )
    await robots_known(world)
    page = processor(world, store)

    failed = await page.process(lease(SEED + "a"), remaining)
    skipped = await page.process(lease(SEED + "b"), 30)

    assert failed.outcome == "done"
    assert "http-status" in failed.error
    assert "longer than the crawl may wait" in world.shelf.throttles["https://docs.test"]
    assert skipped == Completion(outcome=Outcome.SKIP, stats={"skipped_throttled": 1})
    assert world.site.urls == [SEED + "a"]


async def test_a_crawl_delay_over_the_cap_allows_one_request(store: SQLiteStore) -> None:
    world = World({SEED + "a": Route(html()), SEED + "b": Route(html())})
    world.robots_text = "User-agent: *\nCrawl-delay: 86400\n"
    await robots_known(world)
    page = processor(world, store)

    first = await page.process(lease(SEED + "a"), 30)
    second = await page.process(lease(SEED + "b"), 30)

    assert first.outcome == "done"
    assert second.stats == {"skipped_throttled": 1}
    assert world.site.urls == [SEED + "a"]


async def test_network_errors_are_retried_then_reported(store: SQLiteStore) -> None:
    world = World({SEED + "a": Route(error=NetworkError(SEED + "a", "connection reset"))})
    await robots_known(world)
    page = processor(world, store)

    first = await page.process(lease(SEED + "a"), 30)
    last = await page.process(lease(SEED + "a", attempt=2), 30)

    assert first.outcome == "retry"
    assert first.backoff_ms >= 2000  # never sooner than the origin's delay
    assert (last.outcome, last.stats) == ("done", {"fetched": 1, "errors": 1})
    assert last.error.startswith(SEED + "a\tnetwork\t")


def test_robots_rules_survive_the_trip_through_json() -> None:
    text = "User-agent: *\nAllow: /a/b$\nDisallow: /a/\nDisallow: /*.pdf\nCrawl-delay: 3\n"
    rules = parse_robots_txt(text)

    again = rules_from_json(rules_to_json(rules))

    assert again == rules
    for path in ("/a/b", "/a/bc", "/a/", "/x.pdf", "/y.html"):
        assert is_allowed(again, "https://d.test" + path) == is_allowed(
            rules, "https://d.test" + path
        )
