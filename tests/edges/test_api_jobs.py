"""Crawl jobs over the REST API: 202 and a job id, progress, server-sent events, cancel."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.edges.api_helpers import GatedSite, serve_api

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.core.options import Limits
from sitelore.server.api import stopper

CRAWLS = "/api/v1/crawls"


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_site(bundled_site_path()) as base:
        yield base


async def read_events(client: httpx.AsyncClient, path: str) -> list[tuple[str, dict[str, Any]]]:
    """Read a server-sent event stream to its end: (event, data) pairs."""
    events: list[tuple[str, dict[str, Any]]] = []
    name = ""
    async with client.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


class TestJobs:
    async def test_the_server_lists_its_jobs_newest_first_and_the_ui_shows_them(
        self, site: str, tmp_path: Path
    ) -> None:
        """GET /crawls lists jobs started over the API (the web UI's list showed only its own)."""
        async with serve_api(tmp_path) as api:
            ids = []
            for pages in (2, 3):
                started = await api.client.post(CRAWLS, json={"url": f"{site}/", "maxPages": pages})
                ids.append(started.json()["id"])
                await read_events(api.client, started.json()["links"]["events"])
            listed = (await api.client.get(CRAWLS)).json()["crawls"]
            one = (await api.client.get(CRAWLS, params={"limit": 1})).json()["crawls"]
            page = (await api.client.get("/crawls")).text
        assert [job["id"] for job in listed] == ids[::-1]
        assert [job["id"] for job in one] == ids[-1:]
        newest = listed[0]
        assert set(newest) == {
            "id",
            "status",
            "seed",
            "createdAt",
            "finishedAt",
            "progress",
            "links",
        }
        assert newest["status"] == "done"
        assert newest["progress"]["pagesCrawled"] == 3
        assert newest["links"]["self"] == f"{CRAWLS}/{ids[1]}"
        assert all(f"/crawls/{job_id}" in page for job_id in ids)

    async def test_job_answers_202_streams_pages_then_ends_done(
        self, site: str, tmp_path: Path
    ) -> None:
        """POST /crawls is 202 with an id; the events are one per page then an end; GET agrees."""
        async with serve_api(tmp_path) as api:
            started = await api.client.post(CRAWLS, json={"url": f"{site}/", "maxPages": 5})
            assert started.status_code == 202, started.text
            job = started.json()
            assert started.headers["location"] == f"{CRAWLS}/{job['id']}"
            assert job["progress"]["maxPages"] == 5
            assert job["clamped"] == []
            events = await read_events(api.client, job["links"]["events"])
            final = (await api.client.get(job["links"]["self"])).json()
        pages = [data for name, data in events if name == "page"]
        assert [data["seq"] for data in pages] == [1, 2, 3, 4, 5]
        assert pages[0]["page"]["url"] == f"{site}/"
        assert events[-1][0] == "end"
        assert events[-1][1]["status"] == "done"
        assert final["status"] == "done"
        assert final["finishedAt"] is not None
        assert final["progress"]["pagesCrawled"] == 5
        assert final["result"]["pagesIndexed"] == 5
        assert final["result"]["truncatedReason"] == "max_pages"

    async def test_job_above_the_caps_is_clamped_and_the_202_says_so(
        self, site: str, tmp_path: Path
    ) -> None:
        """maxPages and maxDepth above the caps are lowered, and the 202 answer lists them."""
        body = {"url": f"{site}/", "maxPages": 10000, "maxDepth": 99}
        async with serve_api(tmp_path, limits=Limits(max_pages=3, max_depth=1)) as api:
            job = (await api.client.post(CRAWLS, json=body)).json()
            events = await read_events(api.client, job["links"]["events"])
        assert job["applied"]["maxPages"] == 3
        assert job["applied"]["maxDepth"] == 1
        assert {c["field"]: c["applied"] for c in job["clamped"]} == {"maxPages": 3, "maxDepth": 1}
        assert [name for name, _ in events].count("page") == 3
        assert events[-1][1]["result"]["pagesCrawled"] == 3

    async def test_events_resume_after_last_event_id(self, site: str, tmp_path: Path) -> None:
        """A reconnect with Last-Event-ID gets only the events after it."""
        async with serve_api(tmp_path) as api:
            job = (await api.client.post(CRAWLS, json={"url": f"{site}/", "maxPages": 3})).json()
            await read_events(api.client, job["links"]["events"])
            api.client.headers["last-event-id"] = "2"
            resumed = await read_events(api.client, job["links"]["events"])
        assert [name for name, _ in resumed] == ["page", "end"]
        assert resumed[0][1]["seq"] == 3

    async def test_cancel_mid_crawl_keeps_pages_fetched_before(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """DELETE stops a job while a page hangs; the page fetched before stays stored."""
        site, base = gated
        body = {"url": f"{base}/", "maxPages": 10, "concurrency": 1}
        async with serve_api(tmp_path) as api:
            job = (await api.client.post(CRAWLS, json=body)).json()
            await asyncio.wait_for(site.asked.wait(), 10)
            running = (await api.client.get(f"{CRAWLS}/{job['id']}")).json()
            cancelled = await api.client.delete(f"{CRAWLS}/{job['id']}")
            stored = (await api.client.get("/api/v1/documents")).json()
            events = await read_events(api.client, job["links"]["events"])
        assert running["status"] == "running"
        assert running["result"] is None
        assert cancelled.status_code == 200
        result = cancelled.json()
        assert result["status"] == "cancelled"
        assert result["result"]["pagesIndexed"] == 1
        assert [d["url"] for d in result["result"]["documents"]] == [f"{base}/"]
        assert stored["total"] == 1
        assert stored["documents"][0]["url"] == f"{base}/"
        assert events[-1][0] == "end"
        assert events[-1][1]["status"] == "cancelled"

    async def test_crawls_beyond_the_limit_are_429(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """With every crawl slot taken, another job or synchronous crawl is 429 busy."""
        _site, base = gated
        body = {"url": f"{base}/", "concurrency": 1}
        async with serve_api(tmp_path, max_active_crawls=1) as api:
            first = await api.client.post(CRAWLS, json=body)
            second = await api.client.post(CRAWLS, json=body)
            sync = await api.client.post("/api/v1/documents/url", json={"url": f"{base}/"})
            await api.client.delete(f"{CRAWLS}/{first.json()['id']}")
            after = await api.client.post(CRAWLS, json={**body, "maxPages": 1})
        assert first.status_code == 202
        for response in (second, sync):
            assert response.status_code == 429
            assert response.json()["error"]["code"] == "busy"
            assert response.headers["retry-after"] == "30"
        assert after.status_code == 202

    async def test_refused_start_url_is_400_and_robots_refusal_fails_the_job(
        self, site: str, tmp_path: Path
    ) -> None:
        """A private URL is refused at once; a start URL robots.txt disallows fails the job."""
        async with serve_api(tmp_path) as api:
            private = await api.client.post(CRAWLS, json={"url": "http://10.1.2.3/"})
            job = (await api.client.post(CRAWLS, json={"url": f"{site}/internal/"})).json()
            events = await read_events(api.client, job["links"]["events"])
        assert private.status_code == 400
        assert private.json()["error"]["field"] == "url"
        end = events[-1][1]
        assert end["status"] == "failed"
        assert end["error"]["code"] == "robots-denied"
        assert "robots.txt" in end["error"]["message"]
        assert "--no-robots" not in end["error"]["message"]
        assert "set by the operator only" in end["error"]["message"]

    async def test_unknown_job_is_404(self, tmp_path: Path) -> None:
        """GET, DELETE and events of an unknown job are JSON 404s."""
        async with serve_api(tmp_path) as api:
            answers = [
                await api.client.get(f"{CRAWLS}/nope"),
                await api.client.delete(f"{CRAWLS}/nope"),
                await api.client.get(f"{CRAWLS}/nope/events"),
            ]
        for response in answers:
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "not-found"


async def started_when_free(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    """POST a job, retrying while every crawl slot is taken (429), for at most 10 s."""
    async with asyncio.timeout(10):
        while True:
            response = await client.post(CRAWLS, json=body)
            if response.status_code != 429:
                return response
            await asyncio.sleep(0.05)


class TestDisconnect:
    async def test_sync_crawl_stops_when_its_client_disconnects(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """A dropped synchronous spider crawl is cancelled: its slot frees, its pages stay."""
        site, base = gated
        body = {"url": f"{base}/", "spider": True, "maxPages": 10, "concurrency": 1}
        async with serve_api(tmp_path, max_active_crawls=1) as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=30) as leaving:
                request = asyncio.create_task(leaving.post("/api/v1/documents/url", json=body))
                await asyncio.wait_for(site.asked.wait(), 10)  # the crawl hangs on /a
                busy = await api.client.post(CRAWLS, json={"url": f"{base}/", "maxPages": 1})
                request.cancel()
                await asyncio.wait([request])
            after = await started_when_free(api.client, {"url": f"{base}/", "maxPages": 1})
            await api.client.delete(f"{CRAWLS}/{after.json()['id']}")
            stored = (await api.client.get("/api/v1/documents")).json()
        assert busy.status_code == 429  # the synchronous crawl held the only slot
        assert after.status_code == 202
        assert [doc["url"] for doc in stored["documents"]] == [f"{base}/"]

    async def test_sync_crawl_ends_503_when_the_server_stops(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """A stopping server cuts a synchronous crawl: 503 stopped; its pages stay."""
        site, base = gated
        body = {"url": f"{base}/", "spider": True, "maxPages": 10, "concurrency": 1}
        async with serve_api(tmp_path) as api:
            request = asyncio.create_task(api.client.post("/api/v1/documents/url", json=body))
            await asyncio.wait_for(site.asked.wait(), 10)
            await stopper(api.app)()
            answer = await asyncio.wait_for(request, 10)
            stored = (await api.client.get("/api/v1/documents")).json()
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "stopped"
        assert "server is stopping" in answer.json()["error"]["message"]
        assert [doc["url"] for doc in stored["documents"]] == [f"{base}/"]
