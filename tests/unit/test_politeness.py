"""Per-origin spacing, Crawl-delay, Retry-After and the deadline, as pure arithmetic."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from sitelore.core.politeness import (
    Politeness,
    clamp_to_deadline,
    crawl_delay_refusal,
    parse_retry_after,
    retry_after_refusal,
)

A = "https://a.example"
B = "https://b.example"


def test_no_wait_before_the_first_request() -> None:
    polite = Politeness(5.0)
    assert polite.wait_for(A, now=0.0) == 0.0
    assert polite.ready_at(A) == -math.inf


@pytest.mark.parametrize(
    ("now", "expected"),
    [(100.0, 1.0), (100.4, 0.6), (101.0, 0.0), (150.0, 0.0)],
)
def test_spacing_counts_from_the_start_of_the_previous_request(now: float, expected: float) -> None:
    polite = Politeness(1.0)
    polite.record_request(A, now=100.0)
    assert polite.ready_at(A) == 101.0
    assert polite.wait_for(A, now) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("delay", "crawl_delay_ms", "spacing"),
    [
        pytest.param(1.0, None, 1.0, id="no-crawl-delay"),
        pytest.param(1.0, 3000, 3.0, id="crawl-delay-wins-when-larger"),
        pytest.param(2.0, 500, 2.0, id="delay-wins-when-larger"),
        pytest.param(0.0, 250, 0.25, id="fractional-crawl-delay"),
        pytest.param(1.0, 60_000, 10.0, id="crawl-delay-clamped-to-10s"),
        pytest.param(1.0, -5, 1.0, id="negative-crawl-delay-ignored"),
        pytest.param(0.0, 0, 0.0, id="zero"),
    ],
)
def test_spacing_is_max_of_delay_and_clamped_crawl_delay(
    delay: float, crawl_delay_ms: int | None, spacing: float
) -> None:
    polite = Politeness(delay)
    polite.set_crawl_delay(A, crawl_delay_ms)
    assert polite.spacing(A) == spacing
    polite.record_request(A, now=10.0)
    assert polite.wait_for(A, now=10.0) == pytest.approx(spacing)


def test_crawl_delay_can_be_cleared() -> None:
    polite = Politeness(1.0)
    polite.set_crawl_delay(A, 5000)
    polite.set_crawl_delay(A, None)
    assert polite.spacing(A) == 1.0


def test_max_crawl_delay_is_configurable() -> None:
    polite = Politeness(0.0, max_crawl_delay=2.0)
    polite.set_crawl_delay(A, 9000)
    assert polite.spacing(A) == 2.0


def test_origins_are_independent() -> None:
    polite = Politeness(1.0)
    polite.set_crawl_delay(B, 4000)
    polite.record_request(A, now=0.0)
    assert polite.wait_for(B, now=0.0) == 0.0
    polite.record_request(B, now=0.5)
    assert polite.wait_for(A, now=0.5) == pytest.approx(0.5)
    assert polite.wait_for(B, now=0.5) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("retry_after", "expected_ready"),
    [
        pytest.param(30.0, 130.0, id="pushes-out"),
        pytest.param(60.0, 160.0, id="at-the-60s-cap"),
        pytest.param(0.5, 101.0, id="never-brings-forward"),
        pytest.param(0.0, 101.0, id="zero-is-no-op"),
        pytest.param(None, 101.0, id="none-is-no-op"),
        pytest.param(-3.0, 101.0, id="negative-ignored"),
        pytest.param(math.inf, 101.0, id="infinite-does-not-push"),
        pytest.param(math.nan, 101.0, id="nan-ignored"),
    ],
)
def test_retry_after_push_back(retry_after: float | None, expected_ready: float) -> None:
    polite = Politeness(1.0)
    polite.record_request(A, now=100.0)
    polite.push_back(A, now=100.0, seconds=retry_after)
    assert polite.ready_at(A) == expected_ready


THROTTLES = [
    # (retry_after, now, deadline, throttled): a wait the crawl cannot honour ends the origin
    ("within-cap-and-deadline", 30.0, 0.0, 600.0, False),
    ("over-the-cap", 61.0, 0.0, 600.0, True),
    ("a-day", 86400.0, 0.0, 600.0, True),
    ("years-away", 3e8, 0.0, 600.0, True),
    ("infinite", math.inf, 0.0, 600.0, True),
    ("reaches-the-deadline", 30.0, 580.0, 600.0, True),
    ("ends-just-before-the-deadline", 19.0, 580.0, 600.0, False),
    ("no-deadline-within-cap", 60.0, 0.0, math.inf, False),
    ("none-is-no-throttle", None, 0.0, 600.0, False),
    ("zero-is-no-throttle", 0.0, 0.0, 600.0, False),
    ("nan-is-no-throttle", math.nan, 0.0, 600.0, False),
]


@pytest.mark.parametrize(
    ("retry_after", "now", "deadline", "throttled"),
    [pytest.param(r, n, d, t, id=i) for i, r, n, d, t in THROTTLES],
)
def test_retry_after_longer_than_the_crawl_may_wait_throttles(
    retry_after: float | None, now: float, deadline: float, throttled: bool
) -> None:
    refusal = retry_after_refusal(retry_after, left=deadline - now, cap=60.0)
    assert (refusal is not None) is throttled


@pytest.mark.parametrize(
    ("ms", "refused"),
    [(None, False), (0, False), (10_000, False), (10_001, True), (86_400_000, True)],
)
def test_a_crawl_delay_over_the_cap_is_refused(ms: int | None, refused: bool) -> None:
    """Pacing keeps the cap; the refusal says the origin takes no request after its first."""
    assert (crawl_delay_refusal(ms, cap=10.0) is not None) is refused
    polite = Politeness(1.0)
    polite.set_crawl_delay(A, ms)
    assert polite.spacing(A) == max(1.0, min((ms or 0) / 1000, 10.0))


def test_push_back_outlasts_the_next_spacing() -> None:
    polite = Politeness(1.0)
    polite.push_back(A, now=0.0, seconds=30.0)
    polite.record_request(A, now=0.2)  # a request that did not wait (the caller's bug)
    assert polite.ready_at(A) == 30.0


@pytest.mark.parametrize(
    ("wait", "now", "deadline", "expected"),
    [
        pytest.param(2.0, 10.0, 15.0, 2.0, id="fits"),
        pytest.param(0.0, 10.0, 15.0, 0.0, id="no-wait"),
        pytest.param(-1.0, 10.0, 15.0, 0.0, id="negative-is-zero"),
        pytest.param(5.0, 10.0, 15.0, None, id="reaches-deadline"),
        pytest.param(6.0, 10.0, 15.0, None, id="passes-deadline"),
        pytest.param(0.0, 15.0, 15.0, None, id="deadline-now"),
        pytest.param(0.0, 16.0, 15.0, None, id="deadline-past"),
    ],
)
def test_clamp_to_deadline(
    wait: float, now: float, deadline: float, expected: float | None
) -> None:
    assert clamp_to_deadline(wait, now, deadline) == expected


def test_retry_after_never_sleeps_past_the_deadline() -> None:
    polite = Politeness(1.0)
    polite.push_back(A, now=100.0, seconds=45.0)
    assert clamp_to_deadline(polite.wait_for(A, now=100.0), now=100.0, deadline=120.0) is None


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("120", 120.0, id="seconds"),
        pytest.param("0", 0.0, id="zero"),
        pytest.param(" 7 ", 7.0, id="spaces"),
        pytest.param("1.5", 1.5, id="fractional"),
        pytest.param("Thu, 01 Jan 2026 12:00:30 GMT", 30.0, id="http-date-future"),
        pytest.param("Thu, 01 Jan 2026 11:00:00 GMT", 0.0, id="http-date-past"),
        pytest.param("Thursday, 01-Jan-26 12:01:00 GMT", 60.0, id="rfc850-date"),
        pytest.param("Thu Jan  1 12:00:10 2026", 10.0, id="asctime-date"),
        pytest.param(None, None, id="absent"),
        pytest.param("", None, id="empty"),
        pytest.param("-5", None, id="negative"),
        pytest.param("soon", None, id="garbage"),
        pytest.param("nan", None, id="nan"),
        pytest.param("inf", None, id="infinite"),
        pytest.param("12 seconds", None, id="trailing-words"),
        pytest.param("Thu, 99 Foo 2026 99:99:99 GMT", None, id="garbled-date"),
        # Digits str.isdigit or float take but HTTP does not (superscripts raised).
        pytest.param("²", None, id="superscript-digit"),
        pytest.param("¹²³", None, id="superscript-digits"),
        pytest.param("٣", None, id="arabic-indic-digit"),
        pytest.param("\uff11\uff12", None, id="fullwidth-digits"),
        pytest.param("1_000", None, id="underscore"),
        pytest.param("+5", None, id="plus-sign"),
        # Numbers too large for a float: a wait no crawl can give.
        pytest.param("1e309", math.inf, id="exponent-overflow"),
        pytest.param("9" * 400, math.inf, id="digits-overflow"),
        # Dates whose year or offset overflow: garbled.
        pytest.param("01 Jan 99999999999999999999 00:00:00 GMT", None, id="year-overflow"),
        pytest.param("Mon, 01 Jan 2026 00:00:00 +99999999999999999", None, id="offset-overflow"),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_a_retry_after_beyond_any_number_is_refused_in_words() -> None:
    assert retry_after_refusal(math.inf, left=600.0, cap=60.0) == (
        "Retry-After beyond counting is longer than the crawl may wait"
    )
