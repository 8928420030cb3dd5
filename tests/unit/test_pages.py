"""KeptBodies: the live fetch path that keeps page bodies and adds the caller's safe headers."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from tests.fakes import FakeFetcher, Route

from sitelore.app.pages import KeptBodies, check_headers
from sitelore.core.errors import UsageError
from sitelore.core.ports import ExchangeObserver, Fetcher


async def test_bodies_of_pages_are_kept_and_headers_added() -> None:
    inner = FakeFetcher(
        {
            "https://a.example/page": Route(b"<p>x</p>"),
            "https://a.example/sitemap.xml": Route(b"<p>x</p>", content_type="text/xml"),
        }
    )
    seen: list[str] = []
    kept = KeptBodies({"accept-language": "de"}, on_fetch=seen.append)

    @contextlib.asynccontextmanager
    async def live(_observer: ExchangeObserver | None) -> AsyncIterator[Fetcher]:
        yield inner

    async with kept.fetch_path("seed", live) as fetcher:
        await fetcher.fetch("https://a.example/page", headers={"if-none-match": '"1"'})
        await fetcher.fetch("https://a.example/sitemap.xml")
    assert [(call.url, call.headers) for call in inner.calls] == [
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
        ({"Referer": "a\nb"}, "h.Referer: control characters"),
        ({"Accept-Language": "a\x00b"}, "h.Accept-Language: control characters"),
        ({"Accept-Language": "a\x01b"}, "h.Accept-Language: control characters"),
        ({"Pragma": "a\x7fb"}, "h.Pragma: control characters"),
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
