"""What a hostile or confused client gets from the REST and Firecrawl routes of one server.

Each refusal is a 4xx in the route's own error shape, with a code and a message that
names the field, and never repeats a secret the request carried.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.edges.api_helpers import GatedSite, serve_api

from sitelore.core.options import Limits

JSON = {"content-type": "application/json"}


class TestFirecrawlRefusals:
    @pytest.mark.parametrize(
        ("method", "path", "body", "status", "code"),
        [
            ("GET", "/v2/crawl/nope", None, 404, "not-found"),
            ("DELETE", "/v2/crawl/nope", None, 404, "not-found"),
            ("GET", "/v2/batch/scrape/nope", None, 404, "not-found"),
            ("GET", "/v2/crawl/nope/errors", None, 404, "not-found"),
            ("POST", "/v2/map", {"url": "http://127.0.0.1:9/", "location": {"country": "DE"}},
             400, "usage"),
            ("POST", "/v2/batch/scrape", {"urls": ["http://127.0.0.1:9/"], "webhook": "http://x"},
             400, "usage"),
            ("POST", "/v2/scrape", {"url": "http://10.1.2.3/"}, 403, "blocked"),
        ],
    )  # fmt: skip
    async def test_every_refusal_has_a_code(
        self, method: str, path: str, body: object, status: int, code: str, tmp_path: Path
    ) -> None:
        """Errors without a page kind (no such job, a refused option) had ``code: ""``."""
        async with serve_api(tmp_path) as api:
            response = await api.client.request(method, path, json=body)
        assert response.status_code == status
        assert response.json()["success"] is False
        assert response.json()["code"] == code

    async def test_busy_is_429_busy_with_retry_after(
        self, gated: tuple[GatedSite, str], tmp_path: Path
    ) -> None:
        """Every crawl slot taken: a scrape is 429 ``busy`` with Retry-After, as over REST."""
        _site, base = gated
        async with serve_api(tmp_path, max_active_crawls=1) as api:
            first = await api.client.post("/api/v1/crawls", json={"url": f"{base}/"})
            busy = await api.client.post("/v2/scrape", json={"url": f"{base}/"})
            await api.client.delete(f"/api/v1/crawls/{first.json()['id']}")
        assert first.status_code == 202
        assert busy.status_code == 429
        assert busy.json()["code"] == "busy"
        assert busy.headers["retry-after"] == "30"


class TestSecrets:
    async def test_refused_batch_urls_are_listed_without_their_password(
        self, tmp_path: Path
    ) -> None:
        """``ignoreInvalidURLs`` lists the URLs it dropped, with userinfo as ``***``."""
        urls = ["http://bob:hunter2-secret@127.0.0.1:9/a", "http://10.1.2.3/b"]
        async with serve_api(tmp_path) as api:
            answer = await api.client.post(
                "/v2/batch/scrape", json={"urls": urls, "ignoreInvalidURLs": True}
            )
        assert answer.status_code == 200
        assert answer.json()["invalidURLs"] == ["http://***@127.0.0.1:9/a", "http://10.1.2.3/b"]
        assert "hunter2" not in answer.text


class TestUnreadableBodies:
    @pytest.mark.parametrize("path", ["/api/v1/documents/url", "/api/v1/crawls"])
    @pytest.mark.parametrize(
        ("body", "why"),
        [
            (b'{"url": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "nested too deeply"),
            (b'{"url": "http://a.test/\xff"}', "not UTF-8 text"),
        ],
    )
    async def test_rest_answers_invalid_json_naming_the_body(
        self, path: str, body: bytes, why: str, tmp_path: Path
    ) -> None:
        """Bodies under the cap that JSON cannot read: 400 ``invalid-json``, field ``body``
        (they were a bare 400 ``http`` "There was an error parsing the body")."""
        async with serve_api(tmp_path) as api:
            answer = await api.client.post(path, content=body, headers=JSON)
            alive = await api.client.get("/healthz")
        assert answer.status_code == 400
        assert answer.json()["error"] == {
            "code": "invalid-json",
            "message": f"body: not valid JSON ({why})",
            "field": "body",
        }
        assert alive.status_code == 200

    async def test_firecrawl_answers_invalid_json_in_its_shape(self, tmp_path: Path) -> None:
        body = b'{"url": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
        async with serve_api(tmp_path) as api:
            answer = await api.client.post("/v2/scrape", content=body, headers=JSON)
        assert answer.status_code == 400
        assert answer.json() == {
            "success": False,
            "code": "invalid-json",
            "error": "body: not valid JSON (nested too deeply)",
        }

    @pytest.mark.parametrize("path", ["/api/v1/documents/url", "/v2/scrape"])
    async def test_json_sent_as_another_type_is_told_the_content_type(
        self, path: str, tmp_path: Path
    ) -> None:
        """JSON sent as text/plain or a form is no object to FastAPI: the answer says why."""
        async with serve_api(tmp_path) as api:
            answer = await api.client.post(
                path,
                content=b'{"url": "http://127.0.0.1:9/"}',
                headers={"content-type": "text/plain; charset=utf-8"},
            )
        assert answer.status_code == 422
        assert "sent as 'text/plain'; send JSON with Content-Type: application/json" in (
            answer.text
        )


class TestBatchWithinTheCaps:
    async def test_more_urls_than_the_page_cap_are_refused_naming_urls(
        self, tmp_path: Path
    ) -> None:
        """A batch is held to maxPages as a crawl is (1000 URLs ran past a cap of 200)."""
        urls = [f"http://127.0.0.1:9/{n}" for n in range(4)]
        async with serve_api(tmp_path, limits=Limits(max_pages=3)) as api:
            answer = await api.client.post("/v2/batch/scrape", json={"urls": urls})
            within = await api.client.post("/v2/batch/scrape", json={"urls": urls[:3]})
        assert answer.status_code == 400
        assert answer.json()["code"] == "usage"
        assert answer.json()["error"].startswith("urls: 4 URLs; this server scrapes at most 3")
        assert within.status_code == 200

    async def test_a_batch_ends_at_the_deadline_naming_what_it_left(
        self, quick_site: str, tmp_path: Path
    ) -> None:
        """Requests to one site 1 s apart (the operator's delay, on a clock that never
        sleeps: robots.txt at 0 s, pages at 1 s and 2 s), under a 2.5 s deadline: the
        third page (due at 3 s) is an error ``deadline``, not fetched."""
        urls = [f"{quick_site}/faq.html", f"{quick_site}/", f"{quick_site}/guide/"]
        async with serve_api(tmp_path, limits=Limits(deadline_seconds=2.5)) as api:
            started = (await api.client.post("/v2/batch/scrape", json={"urls": urls})).json()
            status: dict[str, object] = {}
            for _ in range(200):  # bounded: the batch runs on the server's loop
                status = (await api.client.get(f"/v2/batch/scrape/{started['id']}")).json()
                if status["status"] != "scraping":
                    break
                await asyncio.sleep(0.05)
            errors = (await api.client.get(f"/v2/batch/scrape/{started['id']}/errors")).json()
        assert status["status"] == "completed"
        assert status["completed"] == 2
        assert [(e["url"], e["code"]) for e in errors["errors"]] == [(urls[2], "deadline")]
        assert "deadline (2.5 s)" in errors["errors"][0]["error"]


class TestNumbers:
    @pytest.mark.parametrize("field", ["deadlineSeconds", "delay"])
    @pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity"])
    @pytest.mark.parametrize("path", ["/api/v1/crawls", "/api/v1/documents/url"])
    async def test_numbers_json_cannot_show_are_422_naming_the_field(
        self, path: str, number: str, field: str, tmp_path: Path
    ) -> None:
        """1e999 reads as infinity: it was clamped and answered ``requested: null``; NaN
        was 'less than or equal to 60'. Both are 'a finite number' now, before any work."""
        body = f'{{"url": "http://127.0.0.1:9/", "{field}": {number}}}'
        async with serve_api(tmp_path) as api:
            answer = await api.client.post(path, content=body, headers=JSON)
        assert answer.status_code == 422
        assert answer.json()["error"]["field"] == field
        assert answer.json()["error"]["message"] == f"{field}: Input should be a finite number"


class TestControlCharacters:
    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ('{"url": "http://127.0.0.1:9/", "pathPrefix": "/a\\u0000b"}', "pathPrefix"),
            ('{"url": "http://127.0.0.1:9/", "excludePatterns": ["ok", "*\\nx"]}',
             "excludePatterns"),
            ('{"url": "http://127.0.0.1:9/", "pathPrefix": "/\\u007f"}', "pathPrefix"),
        ],
    )  # fmt: skip
    async def test_are_422_before_a_job_or_its_record_exists(
        self, body: str, field: str, tmp_path: Path
    ) -> None:
        """A NUL in pathPrefix started a job whose record PostgreSQL cannot store."""
        async with serve_api(tmp_path) as api:
            refused = await api.client.post("/api/v1/crawls", content=body, headers=JSON)
            listed = await api.client.get("/api/v1/crawls")
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == field
        assert "control characters" in refused.json()["error"]["message"]
        assert listed.json()["crawls"] == []


class TestEveryRouteNeedsTheKey:
    KEY = "hostile-clients-key-0123456789"

    async def test_each_described_route_is_401_without_the_key(self, tmp_path: Path) -> None:
        """Every path and method of /openapi.json but /healthz answers 401 without the
        bearer key, with a wrong one, and with the key in the query string instead."""
        async with serve_api(tmp_path, api_key=self.KEY) as api:
            paths = (await api.client.get("/openapi.json")).json()["paths"]
            answers = []
            for path, methods in paths.items():
                if path == "/healthz":
                    continue
                concrete = path.replace("{", "").replace("}", "")
                for method in methods:
                    for headers, query in (
                        ({}, {}),
                        ({"authorization": "Bearer " + "x" * len(self.KEY)}, {}),
                        ({}, {"api_key": self.KEY, "key": self.KEY, "token": self.KEY}),
                    ):
                        response = await api.client.request(
                            method, concrete, headers=headers, params=query, json={}
                        )
                        answers.append((method, path, response.status_code))
        assert len(answers) > 40
        assert {status for _, _, status in answers} == {401}, answers
