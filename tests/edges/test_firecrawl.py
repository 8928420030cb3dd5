"""The Firecrawl-compatible routes driven by the official firecrawl-py SDK.

A real ``sitelore serve`` (a subprocess, uvicorn on 127.0.0.1, a free port, an API key)
crawls the bundled example site served on 127.0.0.2, which the operator allows with
``--allow-private``. The SDK is synchronous, so each call runs in a thread while the
site is served from the test's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import httpx
import pytest
import pytest_asyncio
from firecrawl import Firecrawl
from firecrawl.v2.types import PaginationConfig
from firecrawl.v2.utils.error_handler import FirecrawlError
from tests.edges.test_cli_serve import sitelore_serve

from sitelore.adapters.demo_site import bundled_site_path, serve_site

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

KEY = "firecrawl-compat-test-key-0001"
_T = TypeVar("_T")


async def call(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run one SDK call in a thread (the site answers from this loop meanwhile)."""
    return await asyncio.to_thread(fn, *args, **kwargs)


async def ended(status_of: Callable[[str], _T], job_id: str) -> _T:
    """Poll a job's status until it is no longer ``scraping`` (bounded: 60 s)."""
    for _ in range(240):
        status = await call(status_of, job_id)
        if getattr(status, "status", None) != "scraping":
            return status
        await asyncio.sleep(0.25)
    raise AssertionError(f"job {job_id} still running after 60 s")


#: Every request the example site receives: (monotonic time, raw target).
REQUESTS: list[tuple[float, str]] = []


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def site() -> AsyncIterator[str]:
    async with serve_site(bundled_site_path(), host="127.0.0.2", log=REQUESTS) as base:
        yield base


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """``sitelore serve`` with an API key, 127.0.0.2 allowed, no extra delay."""
    tmp = tmp_path_factory.mktemp("firecrawl")
    flags = ("--api-key", KEY, "--allow-private", "127.0.0.2", "--delay", "0")
    async with sitelore_serve(tmp, *flags) as (url, _process):
        yield url


@pytest.fixture
def fc(server: str) -> Firecrawl:
    return Firecrawl(api_key=KEY, api_url=server, max_retries=1)


class TestScrape:
    async def test_scrape_returns_the_formats_and_metadata(self, fc: Firecrawl, site: str) -> None:
        """markdown, html (main content), rawHtml and links, with Firecrawl's metadata."""
        url = f"{site}/guide/quickstart.html"
        doc = await call(
            fc.scrape, url, formats=["markdown", "html", "rawHtml", "links"], max_age=0
        )
        assert doc.markdown is not None
        assert "Quickstart" in doc.markdown
        assert doc.raw_html is not None
        assert doc.raw_html.lstrip().lower().startswith("<!doctype")
        assert doc.html is not None
        assert "<nav" not in doc.html
        assert len(doc.html) < len(doc.raw_html)
        assert doc.links is not None
        assert f"{site}/guide/installation.html" in doc.links
        meta = doc.metadata
        assert meta is not None
        assert meta.source_url == url
        assert meta.url == url
        assert meta.status_code == 200
        assert meta.content_type is not None
        assert meta.content_type.startswith("text/html")
        assert meta.title == "Quickstart"
        assert meta.language == "en"

    async def test_the_scraped_page_is_stored_and_searchable(
        self, fc: Firecrawl, site: str, server: str
    ) -> None:
        """A scrape stores the page like any submit: the native search finds it."""
        await call(fc.scrape, f"{site}/faq.html", max_age=0)
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {KEY}"}) as client:
            found = await client.get(f"{server}/api/v1/search", params={"q": "frequently"})
        assert f"{site}/faq.html" in [hit["url"] for hit in found.json()["hits"]]

    async def test_a_young_stored_copy_is_served_from_the_store(
        self, fc: Firecrawl, site: str
    ) -> None:
        """maxAge: the second scrape is a cache hit; maxAge 0 fetches again."""
        url = f"{site}/concepts/"
        first = await call(fc.scrape, url, max_age=0)
        again = await call(fc.scrape, url, max_age=60_000)
        fresh = await call(fc.scrape, url, max_age=0)
        assert first.metadata is not None
        assert again.metadata is not None
        assert fresh.metadata is not None
        assert again.metadata.cache_state == "hit"
        assert fresh.metadata.cache_state == "miss"
        assert again.markdown == first.markdown

    async def test_tags_and_whole_page_change_the_markdown(self, fc: Firecrawl, site: str) -> None:
        """onlyMainContent false keeps the navigation; includeTags keeps only what matches."""
        url = f"{site}/guide/quickstart.html"
        whole = await call(fc.scrape, url, only_main_content=False, max_age=0)
        main = await call(fc.scrape, url, max_age=0)
        heading = await call(fc.scrape, url, include_tags=["h1"], max_age=0)
        assert whole.markdown is not None
        assert main.markdown is not None
        assert len(whole.markdown) > len(main.markdown)
        assert heading.markdown is not None
        assert heading.markdown.strip() == "# Quickstart"  # Firecrawl Markdown: no {#id}

    async def test_a_page_answering_404_is_a_document_with_its_status(
        self, fc: Firecrawl, site: str
    ) -> None:
        """As Firecrawl does: success, metadata.statusCode 404 and an error line."""
        doc = await call(fc.scrape, f"{site}/missing.html", max_age=0)
        assert doc.metadata is not None
        assert doc.metadata.status_code == 404
        assert doc.metadata.error is not None
        assert "404" in doc.metadata.error


class TestRefusals:
    @pytest.mark.parametrize(
        ("options", "named"),
        [
            ({"formats": ["screenshot"]}, "formats: 'screenshot' is not supported"),
            ({"formats": ["summary"]}, "formats: 'summary' is not supported"),
            ({"formats": [{"type": "json", "prompt": "x"}]}, "formats: 'json' is not supported"),
            ({"wait_for": 1000}, "waitFor"),
            ({"store_in_cache": False}, "storeInCache"),
            ({"headers": {"Cookie": "a=b"}}, "headers.Cookie"),
            ({"include_tags": ["div >"]}, "includeTags"),
        ],
    )
    async def test_unsupported_scrape_options_are_400_naming_them(
        self, fc: Firecrawl, site: str, options: dict[str, Any], named: str
    ) -> None:
        with pytest.raises(FirecrawlError) as caught:
            await call(fc.scrape, f"{site}/faq.html", **options)
        assert caught.value.status_code == 400
        assert named in str(caught.value)

    async def test_a_private_target_is_refused(self, fc: Firecrawl, site: str) -> None:
        """127.0.0.3 is not allowed by the operator: 403 naming the address."""
        target = site.replace("127.0.0.2", "127.0.0.3")
        with pytest.raises(FirecrawlError) as caught:
            await call(fc.scrape, f"{target}/faq.html")
        assert caught.value.status_code == 403
        assert "127.0.0.3 is loopback" in str(caught.value)

    async def test_a_url_robots_txt_disallows_is_refused(self, fc: Firecrawl, site: str) -> None:
        """/internal/ is disallowed by the site's robots.txt: 403 saying so."""
        with pytest.raises(FirecrawlError) as caught:
            await call(fc.scrape, f"{site}/internal/release-checklist.html", max_age=0)
        assert caught.value.status_code == 403
        assert "robots.txt" in str(caught.value)

    @pytest.mark.parametrize(
        ("options", "named"),
        [
            ({"ignore_robots_txt": True}, "ignoreRobotsTxt: this server always obeys robots.txt"),
            ({"webhook": "https://hooks.example/x"}, "webhook"),
            ({"include_paths": ["(a"]}, "includePaths"),
            ({"prompt": "only the guide"}, "prompt"),
        ],
    )
    async def test_refused_crawl_options_are_400_naming_them(
        self, fc: Firecrawl, site: str, options: dict[str, Any], named: str
    ) -> None:
        with pytest.raises(FirecrawlError) as caught:
            await call(fc.start_crawl, f"{site}/", **options)
        assert caught.value.status_code == 400
        assert named in str(caught.value)

    async def test_without_the_key_the_routes_answer_401(self, server: str, site: str) -> None:
        bare = Firecrawl(api_key="not-the-key-at-all-000", api_url=server, max_retries=1)
        with pytest.raises(FirecrawlError) as caught:
            await call(bare.scrape, f"{site}/faq.html")
        assert caught.value.status_code == 401


class TestCrawl:
    async def test_crawl_waits_and_returns_the_section(
        self, fc: Firecrawl, site: str, server: str
    ) -> None:
        """Default scope: the start URL's path and below; the documents come back. The
        crawl is a job of the native registry too, and its pages are in the store."""
        job = await call(fc.crawl, f"{site}/guide/", limit=20, poll_interval=1, timeout=120)
        assert job.status == "completed"
        urls = sorted(d.metadata.source_url for d in job.data if d.metadata is not None)
        assert urls == sorted(
            f"{site}/guide/{p}"
            for p in ("", "deployment.html", "first-project.html", "installation.html",
                      "quickstart.html", "scheduling.html")
        )  # fmt: skip
        assert all(d.markdown for d in job.data)
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {KEY}"}) as client:
            native = (await client.get(f"{server}/api/v1/crawls/{job.id}")).json()
            listed = (await client.get(f"{server}/api/v1/documents?limit=100")).json()
        assert native["status"] == "done"
        assert native["progress"]["pagesIndexed"] == 6
        assert set(urls) <= {doc["url"] for doc in listed["documents"]}

    async def test_include_paths_regex_and_clamped_limit(self, fc: Firecrawl, site: str) -> None:
        """includePaths limits what is followed (the sitemap lists the pages; the home page
        links only to /guide/); a limit above the cap is clamped and said in warning."""
        job = await call(
            fc.crawl, f"{site}/", include_paths=[r"^/guide/(install|quick)"], limit=100_000,
            poll_interval=1, timeout=120,
        )  # fmt: skip
        urls = sorted(d.metadata.url for d in job.data if d.metadata is not None)
        assert urls == [
            f"{site}/",
            f"{site}/guide/installation.html",
            f"{site}/guide/quickstart.html",
        ]
        assert job.warning is not None
        assert "limit 100000 clamped" in job.warning

    async def test_start_crawl_then_page_through_the_status(self, fc: Firecrawl, site: str) -> None:
        """start_crawl, then status pages of 10 joined by next, as the SDK reads them."""
        started = await call(
            fc.start_crawl, f"{site}/", crawl_entire_domain=True, limit=14, formats=["links"]
        )
        one_page = PaginationConfig(auto_paginate=False)
        status = await ended(
            lambda i: fc.get_crawl_status(i, pagination_config=one_page), started.id
        )
        assert status.status == "completed"
        assert status.completed == 14
        assert len(status.data) == 10
        assert status.next is not None
        rest = await call(fc.get_crawl_status_page, status.next)
        assert len(rest.data) == 4
        assert rest.next is None
        every = [d.metadata.url for d in status.data + rest.data if d.metadata is not None]
        assert len(set(every)) == 14
        assert all(d.links is not None and d.markdown is None for d in status.data)
        assert await call(fc.cancel_crawl, started.id) is False  # 409: it has ended

    async def test_cancel_a_running_crawl(self, fc: Firecrawl, site: str) -> None:
        """DELETE stops the crawl: status cancelled; a second cancel is not an error."""
        started = await call(fc.start_crawl, f"{site}/", crawl_entire_domain=True, delay=2)
        active = await call(fc.get_active_crawls)
        assert started.id in [c.id for c in active.crawls]
        assert await call(fc.cancel_crawl, started.id) is True
        status = await call(fc.get_crawl_status, started.id)
        assert status.status == "cancelled"
        active = await call(fc.get_active_crawls)
        assert started.id not in [c.id for c in active.crawls]

    async def test_errors_list_failed_pages_and_a_refused_start(
        self, fc: Firecrawl, site: str
    ) -> None:
        """A crawl whose start URL robots.txt refuses fails, and its errors say why."""
        started = await call(fc.start_crawl, f"{site}/internal/")
        status = await ended(fc.get_crawl_status, started.id)
        assert status.status == "failed"
        errors = await call(fc.get_crawl_errors, started.id)
        assert len(errors.errors) == 1
        assert "robots.txt" in errors.errors[0].error


class TestMapAndBatch:
    async def test_map_lists_sitemap_and_linked_urls(self, fc: Firecrawl, site: str) -> None:
        """Without a search every listed URL; with one, those that contain it."""
        everything = await call(fc.map, f"{site}/")
        guide = await call(fc.map, f"{site}/", search="guide", limit=3)
        urls = [link.url for link in everything.links]
        assert urls[0] == f"{site}/"
        assert f"{site}/guide/quickstart.html" in urls
        assert len(urls) == len(set(urls)) > 20
        assert len(guide.links) == 3
        assert all("guide" in link.url for link in guide.links)

    async def test_map_sitemap_only_and_skip(self, fc: Firecrawl, site: str) -> None:
        """only: the sitemap's URLs (deep pages included); skip: the page's links only."""
        only = [link.url for link in (await call(fc.map, f"{site}/", sitemap="only")).links]
        skip = [link.url for link in (await call(fc.map, f"{site}/", sitemap="skip")).links]
        listed = (bundled_site_path() / "sitemap.xml").read_text()
        assert f"{site}/guide/quickstart.html" in only
        assert all(f"<loc>{url.removeprefix(site)}</loc>" in listed for url in only)
        assert f"{site}/guide/" in skip
        assert f"{site}/guide/quickstart.html" not in skip  # not linked from the home page

    async def test_batch_scrape_returns_each_page_and_its_errors(
        self, fc: Firecrawl, site: str
    ) -> None:
        """Two pages scraped, one refused by robots.txt and listed in the errors; a private
        address is left out and named in invalidURLs (ignoreInvalidURLs)."""
        urls = [f"{site}/faq.html", f"{site}/guide/", f"{site}/internal/release-checklist.html"]
        private = "http://10.0.0.1/x"
        since = len(REQUESTS)
        started = await call(
            fc.start_batch_scrape, [*urls, private], max_age=0, ignore_invalid_urls=True
        )
        assert started.invalid_urls == [private]
        job = await ended(fc.get_batch_scrape_status, started.id)
        assert job.status == "completed"
        assert sorted(d.metadata.source_url for d in job.data if d.metadata) == sorted(urls[:2])
        pages = {target: at for at, target in REQUESTS[since:] if target != "/robots.txt"}
        # The site's Crawl-delay (0.2 s) spaces the pages though the operator's is 0.
        assert pages["/guide/"] - pages["/faq.html"] >= 0.2
        errors = await call(fc.get_batch_scrape_errors, started.id)
        assert [e.url for e in errors.errors] == [urls[2]]
        assert errors.robots_blocked == [urls[2]]
