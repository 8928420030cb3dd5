"""The REST API through a real HTTP client against uvicorn on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.edges.api_helpers import serve_api
from tests.fakes import FakeClock

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.app.wire import RemotePolicy, SubmitRequest
from sitelore.core.options import Limits

SUBMIT = "/api/v1/documents/url"
GUIDE = [
    "/guide/",
    "/guide/deployment.html",
    "/guide/first-project.html",
    "/guide/installation.html",
    "/guide/quickstart.html",
    "/guide/scheduling.html",
]
SPIDER_FIELDS = ("spider", "maxPages", "maxDepth", "sameDomain", "pathPrefix", "excludePatterns")


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_site(bundled_site_path()) as base:
        yield base


class TestSubmit:
    async def test_seed_example_body_with_spider_answers_the_pinned_shape(
        self, site: str, tmp_path: Path
    ) -> None:
        """The seed's example body crawls the section and answers 201 with the pinned keys."""
        body = {
            "url": f"{site}/guide/",
            "spider": True,
            "maxPages": 50,
            "maxDepth": 2,
            "sameDomain": True,
            "pathPrefix": "/guide/",
        }
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json=body)
            assert response.status_code == 201, response.text
            data = response.json()
            assert set(data) >= {
                "documents", "pagesIndexed", "pagesCrawled", "errors", "truncated",
                "truncatedReason",
            }  # fmt: skip
            assert all(set(doc) == {"id", "url", "title"} for doc in data["documents"])
            assert sorted(doc["url"].removeprefix(site) for doc in data["documents"]) == GUIDE
            assert data["pagesIndexed"] == len(GUIDE)
            assert data["pagesCrawled"] >= data["pagesIndexed"]
            assert data["errors"] == []
            assert data["truncated"] is False
            assert data["truncatedReason"] is None
            assert data["clamped"] == []
            first = data["documents"][0]
            stored = (await api.client.get(f"/api/v1/documents/{first['id']}")).json()
            assert stored["url"] == first["url"]
            assert stored["title"] == first["title"]

    async def test_without_spider_answers_the_one_document(self, site: str, tmp_path: Path) -> None:
        """spider false (the default): one page is fetched and the stored document answered."""
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json={"url": f"{site}/faq.html"})
            assert response.status_code == 201, response.text
            doc = response.json()
            assert doc["url"] == f"{site}/faq.html"
            assert doc["title"] == "Frequently asked questions"
            assert doc["markdown"].strip()
            assert doc["contentType"] == "text/html"
            listed = (await api.client.get("/api/v1/documents")).json()
            assert listed["total"] == 1

    async def test_max_pages_above_the_cap_is_clamped_and_said(
        self, site: str, tmp_path: Path
    ) -> None:
        """maxPages 10000 runs with the operator's cap (8 here) and the answer says so."""
        body = {"url": f"{site}/", "spider": True, "maxPages": 10000}
        async with serve_api(tmp_path, limits=Limits(max_pages=8)) as api:
            response = await api.client.post(SUBMIT, json=body)
            assert response.status_code == 201, response.text
            data = response.json()
        assert data["pagesCrawled"] == 8
        assert data["truncated"] is True
        assert data["truncatedReason"] == "max_pages"
        assert data["applied"]["maxPages"] == 8
        assert data["clamped"] == [{"field": "maxPages", "requested": 10000, "applied": 8}]

    async def test_failed_single_page_is_a_json_error_with_its_kind(
        self, site: str, tmp_path: Path
    ) -> None:
        """A page that answers 404 is a 502 naming the kind; nothing is stored."""
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json={"url": f"{site}/missing.html"})
            assert response.status_code == 502
            assert response.json()["error"]["code"] == "http-status"
            assert "404" in response.json()["error"]["message"]
            assert (await api.client.get("/api/v1/documents")).json()["total"] == 0


class TestRefusals:
    @pytest.mark.parametrize(
        ("url", "reason"),
        [
            ("http://10.0.0.1/", "10.0.0.1 is private"),
            ("http://127.0.0.2/", "127.0.0.2 is loopback"),
            ("http://169.254.169.254/latest/meta-data/", "link-local"),
            ("http://localhost/", "localhost"),
        ],
    )
    async def test_private_url_is_400_with_the_reason(
        self, url: str, reason: str, tmp_path: Path
    ) -> None:
        """A private address (not allowed by the operator) is 400 naming the url and why."""
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json={"url": url, "spider": True})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "blocked"
        assert error["field"] == "url"
        assert reason in error["message"]

    @pytest.mark.parametrize(
        ("extra", "field"),
        [
            ({"maxPages": "x"}, "maxPages"),
            ({"maxDepth": -1}, "maxDepth"),
            ({"allowPrivate": ["10.0.0.0/8"]}, "allowPrivate"),
            ({"frobnicate": True}, "frobnicate"),
            ({"excludePatterns": "*/x*"}, "excludePatterns"),
        ],
    )
    async def test_bad_or_unknown_field_is_422_naming_it(
        self, extra: dict[str, object], field: str, site: str, tmp_path: Path
    ) -> None:
        """A wrong type or an unknown field (allowPrivate included) is 422 naming the field."""
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json={"url": f"{site}/", **extra})
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "validation"
        assert error["field"] == field
        assert error["message"].startswith(f"{field}: ")

    async def test_missing_url_and_bad_json_name_the_body(self, tmp_path: Path) -> None:
        """No url is 422 naming url; a body that is not JSON is 400 naming the body."""
        async with serve_api(tmp_path) as api:
            missing = await api.client.post(SUBMIT, json={"spider": True})
            broken = await api.client.post(
                SUBMIT, content=b"{", headers={"content-type": "application/json"}
            )
        assert missing.status_code == 422
        assert missing.json()["error"]["field"] == "url"
        assert broken.status_code == 400
        assert broken.json()["error"]["field"] == "body"

    async def test_query_limits_are_enforced_naming_the_parameter(self, tmp_path: Path) -> None:
        """search limit above 50 and an empty query are 422 naming the parameter."""
        async with serve_api(tmp_path) as api:
            too_many = await api.client.get("/api/v1/search", params={"q": "x", "limit": 51})
            empty = await api.client.get("/api/v1/search", params={"q": ""})
        assert too_many.status_code == 422
        assert too_many.json()["error"]["field"] == "limit"
        assert empty.status_code == 422
        assert empty.json()["error"]["field"] == "q"

    async def test_body_over_the_limit_is_413(self, tmp_path: Path) -> None:
        """A declared or streamed body over the cap is refused with 413 before parsing."""
        big = b'{"url": "' + b"a" * 5000 + b'"}'

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(big), 1000):
                yield big[start : start + 1000]

        async with serve_api(tmp_path, max_body_bytes=2048) as api:
            declared = await api.client.post(
                SUBMIT, content=big, headers={"content-type": "application/json"}
            )
            streamed = await api.client.post(
                SUBMIT, content=chunks(), headers={"content-type": "application/json"}
            )
        for response in (declared, streamed):
            assert response.status_code == 413
            assert response.json()["error"]["code"] == "too-large"


class TestAuth:
    KEY = "k" * 24

    async def test_with_a_key_requests_without_it_are_401(self, site: str, tmp_path: Path) -> None:
        """With a key set, no or a wrong bearer token is 401; the right one is served."""
        async with serve_api(tmp_path, api_key=self.KEY) as api:
            bare = await api.client.get("/api/v1/documents")
            wrong = await api.client.get(
                "/api/v1/documents", headers={"authorization": "Bearer " + "x" * 24}
            )
            submit = await api.client.post(SUBMIT, json={"url": f"{site}/"})
            right = await api.client.get(
                "/api/v1/documents", headers={"authorization": f"Bearer {self.KEY}"}
            )
            health = await api.client.get("/healthz")
        for response in (bare, wrong, submit):
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"]["code"] == "unauthorized"
            assert self.KEY not in response.text
        assert right.status_code == 200
        assert health.status_code == 200

    async def test_key_is_documented_as_bearer_auth(self, tmp_path: Path) -> None:
        """The OpenAPI document declares bearer auth when a key is set, and only then."""
        async with serve_api(tmp_path, api_key=self.KEY) as api:
            secured = (await api.client.get("/openapi.json")).json()
        async with serve_api(tmp_path) as api:
            open_doc = (await api.client.get("/openapi.json")).json()
        assert secured["security"] == [{"bearerAuth": []}]
        assert "security" not in open_doc


class TestOpenAPI:
    async def test_every_spider_field_has_its_default_and_cap(self, tmp_path: Path) -> None:
        """The request schema lists each spider field with its default; caps are this server's."""
        async with serve_api(tmp_path, limits=Limits(max_pages=120, max_depth=4)) as api:
            doc = (await api.client.get("/openapi.json")).json()
        schemas = doc["components"]["schemas"]
        ref = doc["paths"][SUBMIT]["post"]["requestBody"]["content"]["application/json"]
        props = schemas[ref["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]
        assert props["url"]["maxLength"] == 2048
        for name in SPIDER_FIELDS:
            assert "default" in props[name], name
            assert props[name]["description"], name
        assert props["spider"]["default"] is False
        assert props["maxPages"]["default"] == 25
        assert props["maxDepth"]["default"] == 2
        assert props["maxPages"]["x-hard-cap"] == 120
        assert props["maxDepth"]["x-hard-cap"] == 4
        assert "120" in props["maxPages"]["description"]
        assert "maximum" not in props["maxPages"]  # a larger ask is clamped, not refused
        assert "allowPrivate" not in props
        assert "allow_private" not in props

    async def test_every_route_is_described(self, tmp_path: Path) -> None:
        """All pinned routes appear, and every query parameter carries its limits."""
        async with serve_api(tmp_path) as api:
            doc = (await api.client.get("/openapi.json")).json()
        paths = doc["paths"]
        assert {
            "/healthz", SUBMIT, "/api/v1/documents", "/api/v1/documents/{document_id}",
            "/api/v1/search", "/api/v1/crawls", "/api/v1/crawls/{job_id}",
            "/api/v1/crawls/{job_id}/events",
        } <= set(paths)  # fmt: skip
        params = {p["name"]: p for p in paths["/api/v1/search"]["get"]["parameters"]}
        assert params["limit"]["schema"] == {
            "type": "integer",
            "maximum": 50,
            "minimum": 1,
            "default": 10,
            "description": "Results to return.",
            "title": "Limit",
        }


class TestDocuments:
    async def test_list_get_delete_and_search(self, site: str, tmp_path: Path) -> None:
        """Paged listing, one document, deletion (then 404), and search over the store."""
        async with serve_api(tmp_path) as api:
            client = api.client
            body = {"url": f"{site}/guide/", "spider": True, "pathPrefix": "/guide/"}
            assert (await client.post(SUBMIT, json=body)).status_code == 201
            first = (await client.get("/api/v1/documents", params={"limit": 4})).json()
            assert first["total"] == len(GUIDE)
            assert len(first["documents"]) == 4
            assert first["nextOffset"] == 4
            rest = (await client.get("/api/v1/documents", params={"offset": 4})).json()
            assert rest["nextOffset"] is None
            urls = {d["url"] for d in first["documents"] + rest["documents"]}
            assert urls == {site + path for path in GUIDE}
            hits = (await client.get("/api/v1/search", params={"q": "installation"})).json()
            assert hits["hits"][0]["url"] == f"{site}/guide/installation.html"
            asked = {"q": "how do I verify the installation?"}
            verify = (await client.get("/api/v1/search", params=asked)).json()["hits"][0]
            assert verify["headingPath"] == ["Installation", "Verify the installation"]
            assert verify["anchorUrl"] == f"{site}/guide/installation.html#verify"
            assert set(verify) == {
                "id", "url", "title", "headingPath", "anchorUrl", "section", "snippet", "score"
            }  # fmt: skip
            doomed = hits["hits"][0]["id"]
            assert (await client.delete(f"/api/v1/documents/{doomed}")).status_code == 204
            gone = await client.get(f"/api/v1/documents/{doomed}")
            again = await client.delete(f"/api/v1/documents/{doomed}")
            assert gone.status_code == again.status_code == 404
            assert gone.json()["error"]["code"] == "not-found"

    async def test_unknown_route_is_a_json_404(self, tmp_path: Path) -> None:
        """Even routing errors answer the JSON error shape."""
        async with serve_api(tmp_path) as api:
            response = await api.client.get("/api/v2/nothing")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not-found"

    async def test_healthz(self, tmp_path: Path) -> None:
        """/healthz answers ok with the version."""
        async with serve_api(tmp_path) as api:
            response = await api.client.get("/healthz")
        assert response.json()["status"] == "ok"


#: Loose JSON a lax parser would coerce; each must be a 422 naming its field.
LOOSE_VALUES: list[tuple[str, Any]] = [
    ("spider", "yes"),
    ("spider", "true"),
    ("spider", 1),
    ("maxPages", "10"),
    ("maxPages", 10.5),
    ("maxPages", True),
    ("maxDepth", "2"),
    ("sameDomain", "off"),
    ("sameDomain", 0),
    ("pathPrefix", 5),
    ("excludePatterns", [1]),
    ("delay", "2"),
    ("delay", True),
    ("concurrency", "1"),
    ("respectRobots", "true"),
    ("sitemap", "no"),
    ("url", 5),
]


class TestStrictBodies:
    @pytest.mark.parametrize("path", [SUBMIT, "/api/v1/crawls"])
    async def test_loose_values_are_422_naming_the_field(
        self, path: str, site: str, tmp_path: Path
    ) -> None:
        """No coercion: "10" is not a number, 1 and "yes" are not booleans; nothing runs."""
        answers = []
        async with serve_api(tmp_path) as api:
            for field, value in LOOSE_VALUES:
                body = {"url": f"{site}/", "spider": True, field: value}
                answers.append((field, value, await api.client.post(path, json=body)))
            stored = (await api.client.get("/api/v1/documents")).json()["total"]
        wrong = [
            (field, value, response.status_code, response.text)
            for field, value, response in answers
            if response.status_code != 422
            or response.json()["error"]["field"].split(".")[0] != field  # excludePatterns.0
            or not response.json()["error"]["message"].startswith(field)
        ]
        assert wrong == []
        assert stored == 0

    async def test_json_integers_are_numbers_and_arrays_are_lists(
        self, site: str, tmp_path: Path
    ) -> None:
        """An integer is a valid number of seconds; excludePatterns is a JSON array."""
        body = {
            "url": f"{site}/guide/",
            "spider": True,
            "maxPages": 3,
            "delay": 2,
            "excludePatterns": ["*/deployment*"],
        }
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json=body)
        assert response.status_code == 201, response.text
        applied = response.json()["applied"]
        assert applied["delay"] == 2.0
        assert applied["excludePatterns"] == ["*/deployment*"]


class TestRemotePoliteness:
    """Robots.txt, the least delay and rendering stay the operator's to decide."""

    @pytest.mark.parametrize("path", [SUBMIT, "/api/v1/crawls"])
    async def test_respect_robots_false_is_refused(
        self, path: str, site: str, tmp_path: Path
    ) -> None:
        async with serve_api(tmp_path) as api:
            refused = await api.client.post(
                path, json={"url": f"{site}/", "spider": True, "respectRobots": False}
            )
            stored = (await api.client.get("/api/v1/documents")).json()["total"]
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["field"] == "respectRobots"
        assert "set by the operator only" in error["message"]
        assert stored == 0

    async def test_respect_robots_true_is_accepted(self, site: str, tmp_path: Path) -> None:
        async with serve_api(tmp_path) as api:
            response = await api.client.post(
                SUBMIT, json={"url": f"{site}/faq.html", "respectRobots": True}
            )
        assert response.status_code == 201, response.text

    @pytest.mark.parametrize("path", [SUBMIT, "/api/v1/crawls"])
    async def test_render_needs_the_operator(self, path: str, site: str, tmp_path: Path) -> None:
        async with serve_api(tmp_path) as api:
            refused = await api.client.post(path, json={"url": f"{site}/", "render": True})
            plain = await api.client.post(path, json={"url": f"{site}/", "render": False})
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "render"
        assert "--allow-render" in refused.json()["error"]["message"]
        assert plain.status_code in (201, 202), plain.text

    def test_render_is_passed_on_where_the_operator_allows_it(self) -> None:
        """With --allow-render the request runs as asked (rendering itself is not run here)."""
        request = SubmitRequest(url="https://docs.example.com/", render=True)
        asked, run = RemotePolicy(allow_render=True).admit(request)
        assert run.render is True
        assert asked.render is True

    async def test_smaller_delay_is_raised_said_and_applied(
        self, site: str, tmp_path: Path
    ) -> None:
        """delay 0 runs with the operator's 1 s (the crawl really waits) and clamped says so."""
        body = {"url": f"{site}/guide/", "spider": True, "maxPages": 3, "delay": 0}
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json=body)
            clock = api.runtime.clock
        assert response.status_code == 201, response.text
        data = response.json()
        assert data["applied"]["delay"] == 1.0
        assert data["clamped"] == [{"field": "delay", "requested": 0.0, "applied": 1.0}]
        assert isinstance(clock, FakeClock)
        assert clock.sleeps
        assert min(clock.sleeps) >= 0.99

    async def test_operator_delay_is_the_default_and_the_floor(
        self, site: str, tmp_path: Path
    ) -> None:
        """An omitted delay gets the operator's, silently; a larger ask is kept."""
        base = {"url": f"{site}/guide/", "spider": True, "maxPages": 2}
        async with serve_api(tmp_path, remote=RemotePolicy(delay=0.3)) as api:
            omitted = (await api.client.post(SUBMIT, json=base)).json()
            larger = (await api.client.post(SUBMIT, json={**base, "delay": 2})).json()
            smaller = (await api.client.post(SUBMIT, json={**base, "delay": 0.1})).json()
            doc = (await api.client.get("/openapi.json")).json()
        assert (omitted["applied"]["delay"], omitted["clamped"]) == (0.3, [])
        assert (larger["applied"]["delay"], larger["clamped"]) == (2.0, [])
        assert smaller["applied"]["delay"] == 0.3
        assert smaller["clamped"] == [{"field": "delay", "requested": 0.1, "applied": 0.3}]
        props = doc["components"]["schemas"]["SubmitRequest"]["properties"]
        assert props["delay"]["default"] == 0.3
        assert "0.3 s" in props["delay"]["description"]

    async def test_job_with_a_smaller_delay_says_it_was_raised(
        self, site: str, tmp_path: Path
    ) -> None:
        body = {"url": f"{site}/guide/", "maxPages": 2, "delay": 0.5}
        async with serve_api(tmp_path) as api:
            started = await api.client.post("/api/v1/crawls", json=body)
            job = started.json()
            later = (await api.client.get(job["links"]["self"])).json()
        assert started.status_code == 202, started.text
        clamp = [{"field": "delay", "requested": 0.5, "applied": 1.0}]
        assert job["applied"]["delay"] == 1.0
        assert job["clamped"] == clamp
        assert later["clamped"] == clamp

    async def test_robots_refusal_names_no_cli_flag(self, site: str, tmp_path: Path) -> None:
        """A start URL robots.txt disallows is 400 saying the operator decides, not --no-robots."""
        async with serve_api(tmp_path) as api:
            response = await api.client.post(SUBMIT, json={"url": f"{site}/internal/"})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "robots-denied"
        assert error["field"] == "url"
        assert "--no-robots" not in error["message"]
        assert "respect_robots" not in error["message"]
        assert "respectRobots is set by the operator only" in error["message"]
        assert f"{site}/robots.txt" in error["message"]

    async def test_openapi_documents_the_operator_rules(self, tmp_path: Path) -> None:
        """The pinned seed fields keep their shape; the operator-only ones say so."""
        async with serve_api(tmp_path) as api:
            doc = (await api.client.get("/openapi.json")).json()
        for name in ("SubmitRequest", "CrawlJobRequest"):
            props = doc["components"]["schemas"][name]["properties"]
            assert "set by the operator only" in props["respectRobots"]["description"].lower()
            assert "--allow-render" in props["render"]["description"]
            assert "refused" in props["render"]["description"]
            assert props["delay"]["default"] == 1.0
            assert "minimum" in props["delay"]["description"]
            assert props["url"]["type"] == "string"
            assert props["spider"]["type"] == "boolean"
            assert props["maxPages"]["type"] == "integer"
            assert props["maxDepth"]["type"] == "integer"
            assert props["sameDomain"]["type"] == "boolean"
            assert props["excludePatterns"]["type"] == "array"
            assert "pathPrefix" in props
