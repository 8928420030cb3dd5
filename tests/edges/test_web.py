"""The web UI over HTTP (no browser): headers, CSRF, the login cookie, forms, filters."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from tests.edges.api_helpers import Served, serve_api

from sitelore.core.models import Document, FetchMeta
from sitelore.server.web.gate import CSRF_COOKIE, SESSION_COOKIE

KEY = "web-test-key-0123456789abcdef"
_TOKEN = re.compile(r'name="csrf" value="([0-9a-f]+)"')


async def token(client: httpx.AsyncClient, path: str = "/crawls") -> str:
    """Load a page (which sets the CSRF cookie) and read its form token."""
    page = await client.get(path)
    found = _TOKEN.search(page.text)
    assert found, page.text
    return found.group(1)


async def add(api: Served, url: str, *, status: int = 200, title: str = "Page") -> str:
    meta = FetchMeta(status=status, content_type="text/html", fetched_at=datetime.now(UTC))
    doc = Document(url=url, title=title, markdown=f"# {title}\n\nText about {title}.")
    return (await api.runtime.store.upsert(doc, meta)).id


async def test_pages_carry_a_strict_csp_and_a_csrf_cookie(tmp_path: Path) -> None:
    async with serve_api(tmp_path) as api:
        page = await api.client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        for rule in ("default-src 'none'", "script-src 'self'", "style-src 'self'",
                     "frame-ancestors 'none'", "form-action 'self'"):  # fmt: skip
            assert rule in csp
        assert "unsafe-inline" not in csp
        assert page.headers["x-frame-options"] == "DENY"
        cookie = page.headers["set-cookie"]
        assert cookie.startswith(f"{CSRF_COOKIE}=")
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        api_answer = await api.client.get("/api/v1/documents")
        assert "content-security-policy" not in api_answer.headers  # the REST API is as it was


async def test_every_form_post_needs_the_csrf_token(tmp_path: Path) -> None:
    async with serve_api(tmp_path) as api:
        doc_id = await add(api, "http://a.test/one")
        posts = [f"/documents/{doc_id}/delete", "/crawls", "/login", "/logout"]
        for path in posts:
            refused = await api.client.post(path)
            assert refused.status_code == 403, path
            assert "security token is missing or stale" in refused.text
        good = await token(api.client)
        wrong = {"csrf": "0" * 64}
        assert (await api.client.post(posts[0], data=wrong)).status_code == 403
        assert await api.runtime.store.get(doc_id) is not None
        deleted = await api.client.post(posts[0], data={"csrf": good})
        assert deleted.status_code == 303
        assert await api.runtime.store.get(doc_id) is None


async def test_a_token_without_its_cookie_is_refused(tmp_path: Path) -> None:
    """A cross-site form carries no SameSite=Strict cookie, so a stolen token is no use."""
    async with serve_api(tmp_path) as api:
        good = await token(api.client)
        async with httpx.AsyncClient(base_url=api.url) as stranger:
            refused = await stranger.post("/crawls", data={"csrf": good, "url": "http://a.test/"})
        assert refused.status_code == 403


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"url": "http://a.test/", "maxPages": "lots"}, "maxPages"),
        ({"url": "ftp://a.test/"}, "ftp://a.test/"),
        ({"url": "http://a.test/", "render": "1"}, "render"),
        ({"url": "http://a.test/", "maxDepth": "-1"}, "maxDepth"),
    ],
)
async def test_crawl_form_errors_name_the_field(
    tmp_path: Path, fields: dict[str, str], named: str
) -> None:
    async with serve_api(tmp_path) as api:
        answer = await api.client.post("/crawls", data={**fields, "csrf": await token(api.client)})
        assert answer.status_code == 422
        error = re.search(r'<p class="error" role="alert"[^>]*>([^<]+)</p>', answer.text)
        assert error, answer.text
        assert named in error.group(1)
        assert 'value="' + fields["url"] + '"' in answer.text  # the form keeps what was typed


async def test_a_refused_url_is_shown_again_without_its_password(tmp_path: Path) -> None:
    """The form keeps the URL that was typed, but never the password in it."""
    url = "http://alice:hunter2-secret@a.test/docs/"
    async with serve_api(tmp_path) as api:
        form = {"url": url, "csrf": await token(api.client)}
        answer = await api.client.post("/crawls", data=form)
    assert answer.status_code == 422
    assert "credentials" in answer.text
    assert "hunter2" not in answer.text
    assert 'value="http://***@a.test/docs/"' in answer.text


async def test_document_filters_and_paging(tmp_path: Path) -> None:
    async with serve_api(tmp_path) as api:
        for n in range(30):
            await add(api, f"http://a.test/p{n}", title=f"Alpha {n}")
        await add(api, "http://b.test/gone", status=200, title="Beta gone")
        await api.runtime.store.mark_removed("http://b.test/gone", status=410, at=datetime.now(UTC))
        await add(api, "http://b.test/err", status=404, title="Beta missing")
        everything = await api.client.get("/documents")
        assert "32 documents" in everything.text
        assert "Page 1 of 2" in everything.text
        second = await api.client.get("/documents", params={"page": 2})
        assert "Page 2 of 2" in second.text
        by_host = await api.client.get("/documents", params={"host": "b.test"})
        assert "2 documents" in by_host.text
        assert "Alpha" not in by_host.text
        by_status = await api.client.get("/documents", params={"status": 404})
        assert "Beta missing" in by_status.text
        assert "Beta gone" not in by_status.text
        removed = await api.client.get("/documents", params={"removed": "removed"})
        assert "1 document." in removed.text
        assert "Beta gone" in removed.text
        live = await api.client.get("/documents", params={"removed": "live", "host": "b.test"})
        assert "Beta missing" in live.text
        assert "Beta gone" not in live.text


async def test_ui_routes_stay_out_of_the_api_description(tmp_path: Path) -> None:
    async with serve_api(tmp_path) as api:
        paths = (await api.client.get("/openapi.json")).json()["paths"]
        assert paths
        # The REST API and the Firecrawl-compatible routes; no UI page.
        assert all(p.startswith(("/api/v1/", "/v2/", "/healthz")) for p in paths)
        assert not any(p.startswith(("/documents", "/crawls", "/sources", "/login")) for p in paths)
        script = await api.client.get("/static/app.js")
        assert script.status_code == 200
        assert "EventSource" in script.text


class TestWithAnApiKey:
    async def test_pages_ask_for_the_key_once(self, tmp_path: Path) -> None:
        async with serve_api(tmp_path, api_key=KEY) as api:
            client = api.client
            first = await client.get("/documents?host=a.test")
            assert first.status_code == 303
            assert first.headers["location"] == "/login?next=/documents"
            assert (await client.get("/static/app.css")).status_code == 200
            form = await client.get("/login", params={"next": "/documents"})
            csrf = _TOKEN.search(form.text)
            assert form.status_code == 200
            assert csrf
            bad = await client.post(
                "/login", data={"csrf": csrf.group(1), "key": "nope", "next": "/documents"}
            )
            assert bad.status_code == 401
            good = await client.post(
                "/login", data={"csrf": csrf.group(1), "key": KEY, "next": "/documents"}
            )
            assert good.status_code == 303
            assert good.headers["location"] == "/documents"
            cookie = good.headers["set-cookie"]
            assert cookie.startswith(f"{SESSION_COOKIE}=")
            assert "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie
            assert KEY not in cookie
            assert (await client.get("/documents")).status_code == 200
            # The REST API still takes only the bearer key, never the UI's cookie.
            assert (await client.get("/api/v1/documents")).status_code == 401
            bearer = {"authorization": f"Bearer {KEY}"}
            assert (await client.get("/api/v1/documents", headers=bearer)).status_code == 200

    @pytest.mark.parametrize("target", ["//evil.test/", "https://evil.test/", "/\\evil.test"])
    async def test_login_never_sends_the_browser_elsewhere(
        self, tmp_path: Path, target: str
    ) -> None:
        async with serve_api(tmp_path, api_key=KEY) as api:
            csrf = await token(api.client, "/login")
            done = await api.client.post("/login", data={"csrf": csrf, "key": KEY, "next": target})
            assert done.status_code == 303
            assert done.headers["location"] == "/"


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        ("/?q=" + "a" * 501, 422, "q: String should have at most 500 characters"),
        ("/documents?page=99999999999", 422, "page: Input should be less than or equal to"),
        ("/no/such/page", 404, "Not Found"),
    ],
)
async def test_ui_errors_are_pages_not_json(
    tmp_path: Path, path: str, status: int, said: str
) -> None:
    """A browser on a UI path gets the UI's error page (it got the API's JSON)."""
    async with serve_api(tmp_path) as api:
        answer = await api.client.get(path)
        api_answer = await api.client.get("/api/v1/search", params={"q": "a" * 501})
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")
    assert "content-security-policy" in answer.headers
    assert said in answer.text
    assert api_answer.status_code == 422
    assert api_answer.json()["error"]["field"] == "q"  # the API answers JSON as before
