"""KeptBodies: the live fetch path that keeps page bodies and adds the caller's safe headers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime

import pytest

from sitelore.errors import UsageError
from sitelore.models import Headers, Snapshot
from sitelore.pages import KeptBodies, check_headers
from sitelore.ports import ExchangeObserver, Fetcher, HopCheck


class _Recording:
    """A fetcher answering every URL with one body of the type its path names."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, str]]] = []

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        timeout: float | None = None,
        truncate: bool = False,
    ) -> Snapshot:
        self.sent.append((url, dict(headers or {})))
        kind = "text/xml" if url.endswith(".xml") else "text/html; charset=utf-8"
        return Snapshot(
            url=url, final_url=url, status=200, headers=Headers.of([("content-type", kind)]),
            body=b"<p>x</p>", fetched_at=datetime(2026, 1, 1, tzinfo=UTC), elapsed_ms=1.0,
        )  # fmt: skip


async def test_bodies_of_pages_are_kept_and_headers_added() -> None:
    inner = _Recording()
    seen: list[str] = []
    kept = KeptBodies({"accept-language": "de"}, on_fetch=seen.append)

    @contextlib.asynccontextmanager
    async def live(_observer: ExchangeObserver | None) -> AsyncIterator[Fetcher]:
        yield inner

    async with kept.fetch_path("seed", live) as fetcher:
        await fetcher.fetch("https://a.example/page", headers={"if-none-match": '"1"'})
        await fetcher.fetch("https://a.example/sitemap.xml")
    assert inner.sent == [
        ("https://a.example/page", {"accept-language": "de", "if-none-match": '"1"'}),
        ("https://a.example/sitemap.xml", {"accept-language": "de"}),
    ]
    page = kept.body_of("https://a.example/page")
    assert page is not None
    assert page.body == b"<p>x</p>"
    assert kept.body_of("https://a.example/sitemap.xml") is None  # not a page type
    assert seen == ["https://a.example/page", "https://a.example/sitemap.xml"]


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"Cookie": "s=1"}, "h.Cookie: not a header this server sends"),
        ({"Authorization": "Bearer x"}, "h.Authorization: "),
        ({"User-Agent": "x"}, "h.User-Agent: "),
        ({"Host": "internal"}, "h.Host: "),
        ({"Referer": "a\nb"}, "h.Referer: line breaks"),
    ],
)
def test_unsafe_headers_are_refused_by_name(headers: dict[str, str], error: str) -> None:
    with pytest.raises(UsageError, match=error):
        check_headers("h", headers)


def test_safe_headers_are_lower_cased() -> None:
    assert check_headers("h", {"Accept-Language": "fr", "DNT": "1"}) == {
        "accept-language": "fr",
        "dnt": "1",
    }
