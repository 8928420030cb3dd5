"""The crawl frontier: BFS order, budgets, dedup, scope, slots given back, counters."""

from __future__ import annotations

import pytest

from sitelore.core.errors import InvalidURLError
from sitelore.core.models import SkipReason
from sitelore.core.options import CrawlOptions
from sitelore.core.urls import Scope, normalize_url
from sitelore.crawl.frontier import CrawlItem, Frontier

SEED = "https://docs.example.com/"


def _frontier(seed: str = SEED, /, **options: object) -> Frontier:
    opts = CrawlOptions.model_validate({"max_pages": 100, "max_depth": 5, **options})
    return Frontier(seed, opts, Scope.from_options(seed, opts))


def _url(path: str) -> str:
    return f"https://docs.example.com/{path}"


def _drain(frontier: Frontier, site: dict[str, list[str]]) -> list[CrawlItem]:
    """Run a sequential crawl of ``site`` (path -> linked paths); return what was taken."""
    taken: list[CrawlItem] = []
    while (item := frontier.take()) is not None:
        taken.append(item)
        path = item.url.removeprefix(SEED)
        frontier.offer_links([_url(p) for p in site.get(path, [])], item.depth + 1)
        frontier.done(item)
    return taken


SITE = {
    "": ["a", "b", "c"],
    "a": ["a1", "a2", "", "b"],
    "b": ["b1", "a"],
    "c": ["c1"],
    "a1": ["a1x"],
    "b1": ["b1x", ""],
    "c1": [],
}


def test_bfs_takes_every_depth_before_the_next() -> None:
    taken = _drain(_frontier(), SITE)
    depths = [item.depth for item in taken]
    assert depths == sorted(depths)
    assert [item.url for item in taken] == [
        _url(p) for p in ["", "a", "b", "c", "a1", "a2", "b1", "c1", "a1x", "b1x"]
    ]


def test_seed_is_taken_first_at_depth_zero() -> None:
    frontier = _frontier()
    assert frontier.take() == CrawlItem(SEED, 0)


def test_seed_is_admitted_even_outside_the_scope() -> None:
    options = CrawlOptions(path_prefix="/guide/", exclude_patterns=("*",))
    scope = Scope.from_options(SEED, options)
    frontier = Frontier(SEED, options, scope)
    assert frontier.take() == CrawlItem(SEED, 0)


def test_seed_is_normalised() -> None:
    frontier = _frontier("HTTPS://Docs.Example.com:443#top")
    assert frontier.seed == SEED
    assert frontier.offer(SEED, 1) == SkipReason.DUPLICATE


def test_invalid_seed_is_refused() -> None:
    with pytest.raises(InvalidURLError):
        _frontier("ftp://docs.example.com/")


@pytest.mark.parametrize(
    ("max_depth", "expected"),
    [
        (0, [""]),
        (1, ["", "a", "b", "c"]),
        (2, ["", "a", "b", "c", "a1", "a2", "b1", "c1"]),
    ],
)
def test_depth_limit(max_depth: int, expected: list[str]) -> None:
    frontier = _frontier(max_depth=max_depth)
    assert [item.url for item in _drain(frontier, SITE)] == [_url(p) for p in expected]
    assert frontier.skipped.get("depth", 0) > 0


def test_page_limit_truncates_and_counts_unfetched() -> None:
    frontier = _frontier(max_pages=3)
    taken = _drain(frontier, SITE)
    assert [item.url for item in taken] == [_url(p) for p in ["", "a", "b"]]
    assert frontier.truncated
    assert frontier.truncated_reason == "max_pages"
    # c, a1, a2, b1 queued and never fetched.
    assert frontier.unfetched == 4
    assert frontier.skipped["cap"] == 4
    assert frontier.finished


def test_exact_budget_is_not_truncated() -> None:
    frontier = _frontier(max_pages=4, max_depth=1)
    _drain(frontier, SITE)
    assert not frontier.truncated
    assert frontier.truncated_reason is None
    assert frontier.unfetched == 0
    assert "cap" not in frontier.skipped


def test_duplicates_and_cycles_are_fetched_once() -> None:
    frontier = _frontier()
    taken = _drain(frontier, SITE)
    urls = [item.url for item in taken]
    assert len(urls) == len(set(urls))
    # "" from a and b1, "b" from a, "a" from b.
    assert frontier.skipped["duplicate"] == 4
    assert frontier.finished


@pytest.mark.parametrize(
    "spelling",
    [
        "https://docs.example.com/a#section",
        "HTTPS://DOCS.EXAMPLE.COM/a",
        "https://docs.example.com:443/a",
        "https://docs.example.com/x/../a",
        "https://docs.example.com/%61",
    ],
)
def test_spellings_of_one_url_are_duplicates(spelling: str) -> None:
    frontier = _frontier()
    assert frontier.offer(_url("a"), 1) is None
    assert frontier.offer(spelling, 1) == SkipReason.DUPLICATE


def test_trailing_slash_is_a_different_url() -> None:
    frontier = _frontier()
    assert frontier.offer(_url("dir"), 1) is None
    assert frontier.offer(_url("dir/"), 1) is None


@pytest.mark.parametrize(
    ("options", "url"),
    [
        ({"same_domain": True}, "https://other.example/"),
        ({"path_prefix": "/guide/"}, "https://docs.example.com/blog/"),
        ({"exclude_patterns": ("*/private/*",)}, "https://docs.example.com/private/x"),
        # Files no converter reads (Sphinx links figures to their full-size images).
        ({}, "https://docs.example.com/_images/figure.png"),
        ({}, "https://docs.example.com/dl/release-1.2.tar.gz?mirror=2"),
        ({}, "https://docs.example.com/Manual.DOCX"),
    ],
)
def test_out_of_scope_links_are_filtered(options: dict[str, object], url: str) -> None:
    frontier = _frontier(**options)
    assert frontier.offer(url, 1) == SkipReason.FILTERED
    assert frontier.offer(url, 1) == SkipReason.DUPLICATE
    assert frontier.skipped == {"filtered": 1, "duplicate": 1}


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.example.com/guide/express.js",  # a page name, not a script
        "https://docs.example.com/api/os.path",
        "https://docs.example.com/v1.2",
        "https://docs.example.com/notes.txt",
        "https://docs.example.com/manual.pdf",
        "https://docs.example.com/.png",  # a dot file: no extension
        "https://docs.example.com/images.png/",  # a folder
        "https://docs.example.com/wiki/File:Diagram.png",  # a wiki's page about the file
    ],
)
def test_links_to_what_may_be_a_document_are_followed(url: str) -> None:
    assert _frontier().offer(url, 1) is None


def test_invalid_links_are_counted_every_time() -> None:
    frontier = _frontier()
    assert frontier.offer("mailto:a@docs.example.com", 1) == SkipReason.INVALID
    assert frontier.offer_links(["javascript:void(0)", "mailto:a@docs.example.com"], 1) == 0
    assert frontier.skipped == {"invalid": 3}


def test_too_deep_link_is_admitted_when_found_shallower() -> None:
    frontier = _frontier(max_depth=1)
    assert frontier.offer(_url("x"), 2) == SkipReason.DEPTH
    assert frontier.offer(_url("x"), 2) == SkipReason.DUPLICATE
    assert frontier.offer(_url("x"), 1) is None
    assert frontier.skipped == {"depth": 1, "duplicate": 1}


def test_every_offer_is_counted_once() -> None:
    frontier = _frontier(max_depth=1, exclude_patterns=("*/x*",))
    links = [_url(p) for p in ["a", "a", "x1", "x1", "b"]] + ["mailto:z@q", "mailto:z@q"]
    admitted = frontier.offer_links(links, 1)
    admitted += frontier.offer_links([_url("c"), _url("a")], 2)
    assert admitted == 2
    assert sum(frontier.skipped.values()) + admitted == len(links) + 2


def test_robots_skip_gives_the_page_slot_back() -> None:
    frontier = _frontier(max_pages=2)
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("disallowed"), _url("ok")], 1)
    frontier.done(seed)
    first = frontier.take()
    assert first == CrawlItem(_url("disallowed"), 1)
    assert frontier.take() is None  # budget of 2 is in use
    frontier.release(first, SkipReason.ROBOTS)
    assert frontier.take() == CrawlItem(_url("ok"), 1)
    assert frontier.skipped == {"robots": 1}


def test_requeue_puts_an_unstarted_item_back_first() -> None:
    frontier = _frontier(max_pages=2)
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("a"), _url("b")], 1)
    frontier.done(seed)
    a = frontier.take()
    assert a is not None
    frontier.requeue(a)
    assert frontier.unfetched == 2
    assert frontier.skipped == {}
    assert frontier.in_flight == 0
    assert frontier.take() == a
    assert frontier.truncated
    assert frontier.skipped == {"cap": 1}


def test_release_is_robots_by_default() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.release(seed)
    assert frontier.skipped == {"robots": 1}


def test_take_waits_for_pages_two_levels_up() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("a"), _url("b")], 1)
    frontier.done(seed)
    a, b = frontier.take(), frontier.take()
    assert a is not None
    assert b is not None
    frontier.offer_links([_url("a1")], 2)
    frontier.done(a)
    a1 = frontier.take()  # depth 2 may start while depth 1 is in flight
    assert a1 == CrawlItem(_url("a1"), 2)
    frontier.offer_links([_url("a1x")], 3)
    frontier.done(a1)
    assert frontier.take() is None  # b (depth 1) could still find depth-2 links
    assert not frontier.finished
    frontier.offer_links([_url("b1")], 2)
    frontier.done(b)
    assert frontier.take() == CrawlItem(_url("b1"), 2)


def test_concurrent_out_of_order_completion_keeps_bfs_start_order() -> None:
    frontier = _frontier()
    in_flight: list[CrawlItem] = []
    started: list[CrawlItem] = []
    while not frontier.finished:
        while len(in_flight) < 3 and (item := frontier.take()) is not None:
            in_flight.append(item)
            started.append(item)
        # Finish the most recently started page first (the worst order for BFS).
        finished = in_flight.pop()
        path = finished.url.removeprefix(SEED)
        frontier.offer_links([_url(p) for p in SITE.get(path, [])], finished.depth + 1)
        frontier.done(finished)
    depths = [item.depth for item in started]
    assert depths == sorted(depths)
    assert {item.url for item in started} == {item.url for item in _drain(_frontier(), SITE)}


def test_a_redirect_onto_a_known_url_is_a_duplicate() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("latest/"), _url("v2/")], 1)
    frontier.done(seed)
    latest = frontier.take()
    v2 = frontier.take()
    assert latest is not None
    assert v2 is not None
    frontier.done(latest)
    assert not frontier.offer_hop(latest, _url("v2/"))  # fetched already
    assert not frontier.offer_hop(latest, SEED)
    assert frontier.skipped["duplicate"] == 2


def test_a_redirect_target_is_queued_next_with_its_hops_and_first_url() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("old"), _url("other")], 1)
    frontier.done(seed)
    old = frontier.take()
    assert old is not None
    frontier.done(old)
    assert frontier.offer_hop(old, "https://docs.example.com/new#frag")
    hop = frontier.take()
    assert hop == CrawlItem(_url("new"), 1, 0, 1, _url("old"))
    frontier.done(hop)
    assert frontier.offer_hop(hop, "https://elsewhere.example/landing")  # out of scope: fetched
    second = frontier.take()
    assert second == CrawlItem("https://elsewhere.example/landing", 1, 0, 2, _url("old"))
    assert frontier.offer(_url("new"), 2) == SkipReason.DUPLICATE


def test_a_redirect_to_a_queued_url_leaves_it_to_its_own_turn() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("old"), _url("new")], 1)
    frontier.done(seed)
    old = frontier.take()
    assert old is not None
    frontier.done(old)
    assert not frontier.offer_hop(old, _url("new"))
    assert frontier.take() == CrawlItem(_url("new"), 1)


def test_a_retry_keeps_its_attempt_and_goes_first() -> None:
    frontier = _frontier()
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("a"), _url("b")], 1)
    frontier.done(seed)
    a = frontier.take()
    assert a is not None
    frontier.requeue(a._replace(attempt=1))
    assert frontier.take() == CrawlItem(_url("a"), 1, attempt=1)
    assert frontier.take() == CrawlItem(_url("b"), 1)


def test_offer_links_normalises_each_distinct_string_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def counting(url: str) -> str:
        calls.append(url)
        return normalize_url(url)

    frontier = _frontier()
    monkeypatch.setattr("sitelore.crawl.frontier.normalize_url", counting)
    sidebar = [_url(f"page-{i}") for i in range(50)] + ["mailto:x@y"]
    for _ in range(20):
        frontier.offer_links(sidebar, 1)
    assert sorted(calls) == sorted(sidebar)
    assert frontier.unfetched == 51  # seed + 50
    assert frontier.skipped["duplicate"] == 19 * 50
    assert frontier.skipped["invalid"] == 20


def test_offer_links_returns_the_number_admitted() -> None:
    frontier = _frontier()
    assert frontier.offer_links([_url("a"), _url("a#x"), _url("b"), SEED], 1) == 2


def test_finished_when_queue_empty_and_nothing_in_flight() -> None:
    frontier = _frontier()
    states = [frontier.finished]
    seed = frontier.take()
    assert seed is not None
    states.append(frontier.finished)
    frontier.done(seed)
    states.append(frontier.finished)
    assert states == [False, False, True]
    assert frontier.in_flight == 0


def test_repr_is_informative() -> None:
    frontier = _frontier(max_pages=7)
    assert "pending=1" in repr(frontier)
    assert "taken=0/7" in repr(frontier)


def test_skipped_urls_say_why_each_was_not_fetched() -> None:
    """A few URLs per reason are kept beside the exact counts; duplicates keep none."""
    frontier = _frontier(max_pages=3, max_depth=1, path_prefix="/docs")
    seed = frontier.take()
    assert seed is not None
    links = [_url("docs/a"), _url("docs/b"), _url("docs/c"), _url("blog/x"), "mailto:a@b"]
    frontier.offer_links([*links, _url("docs/a")], 1)
    frontier.offer(_url("docs/deep"), 2)
    frontier.done(seed)
    first = frontier.take()
    assert first is not None
    frontier.release(first, SkipReason.ROBOTS)
    assert frontier.skipped_urls == {
        "filtered": [_url("blog/x")],
        "invalid": ["mailto:a@b"],
        "depth": [_url("docs/deep")],
        "robots": [_url("docs/a")],
    }
    frontier.take()
    frontier.take()
    assert frontier.skipped == {
        "filtered": 1,
        "invalid": 1,
        "depth": 1,
        "robots": 1,
        "duplicate": 1,
    }


def test_skipped_urls_keep_a_bounded_number_per_reason() -> None:
    frontier = _frontier(max_depth=0)
    frontier.offer_links([_url(f"p{i}") for i in range(500)], 1)
    assert frontier.skipped["depth"] == 500
    assert frontier.skipped_urls["depth"] == [_url(f"p{i}") for i in range(20)]


def test_urls_left_by_the_page_budget_are_named_under_cap() -> None:
    frontier = _frontier(max_pages=3)
    _drain(frontier, SITE)
    assert frontier.skipped_urls["cap"] == [_url(p) for p in ["c", "a1", "a2", "b1"]]


def test_a_redirect_target_goes_on_with_its_page_past_the_budget() -> None:
    """``fetch URL`` is a one-page crawl: a redirect must still reach its target."""
    options = CrawlOptions(max_pages=1, max_depth=1)
    frontier = Frontier(SEED, options, Scope.from_options(SEED, options))
    seed = frontier.take()
    assert seed is not None
    frontier.offer_links([_url("next")], 1)
    frontier.done(seed)
    assert frontier.offer_hop(seed, _url("moved"))
    assert not frontier.finished
    hop = frontier.take()
    assert hop == CrawlItem(_url("moved"), 0, 0, 1, SEED)
    frontier.release(hop)  # robots said no: no slot comes back, the page had it
    assert frontier.take() is None  # "next" stays queued: the budget is spent
    assert frontier.skipped_urls["cap"] == [_url("next")]
    assert frontier.finished
