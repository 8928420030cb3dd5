"""REST crawls when another origin is hostile: 201 / a finished job, never a 400."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from tests.edges.api_helpers import serve_api
from tests.fakes import FakeResolver
from tests.loopback import html, links, serve, text

SUBMIT = "/api/v1/documents/url"
CRAWLS = "/api/v1/crawls"
ALLOW_ALL = text("User-agent: *\nAllow: /\n")


async def last_event(client: httpx.AsyncClient, path: str) -> tuple[str, dict[str, object]]:
    """The last (event, data) pair of a server-sent event stream read to its end."""
    name, data = "", ""
    async with client.stream("GET", path) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
    return name, json.loads(data)


async def test_refused_link_is_blocked_and_the_crawl_answers_201(tmp_path: Path) -> None:
    """A link whose host resolves to a refused address: 201 with the summary, job done."""
    resolver = FakeResolver({"evil.test": ["127.0.0.3"]})
    async with serve({"/robots.txt": ALLOW_ALL, "/x": html("secret")}, "127.0.0.3") as evil:
        port = evil.origin.rsplit(":", 1)[1]
        routes = {
            "/robots.txt": ALLOW_ALL,
            "/": links(f"http://evil.test:{port}/x", "/ok"),
            "/ok": html("fine"),
        }
        async with serve(routes) as site, serve_api(tmp_path, resolver=resolver) as api:
            body = {"url": site.origin + "/", "spider": True, "sameDomain": False}
            response = await api.client.post(SUBMIT, json=body)
            job = (
                await api.client.post(CRAWLS, json={"url": body["url"], "sameDomain": False})
            ).json()
            name, end = await last_event(api.client, job["links"]["events"])
            final = (await api.client.get(job["links"]["self"])).json()
    assert response.status_code == 201, response.text
    data = response.json()
    assert data["pagesIndexed"] == 2
    assert data["skipped"]["blocked"] == 1
    assert data["skipped"]["throttled"] == 0
    assert name == "end"
    assert end["status"] == "done"
    assert final["status"] == "done"
    assert evil.requests == []
