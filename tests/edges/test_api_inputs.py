"""Inputs the REST API refuses before any work starts, and the ones JSON Schema allows."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.edges.api_helpers import serve_api

CRAWLS = "/api/v1/crawls"
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("offset", "status"),
    [("9223372036854775808", 422), ("1000000001", 422), ("1000000000", 200), ("-1", 422)],
)
async def test_listing_offsets_stay_within_the_documented_cap(
    offset: str, status: int, tmp_path: Path
) -> None:
    """Offsets past the cap (far inside SQLite's 64-bit range) are 422, never 500."""
    async with serve_api(tmp_path) as api:
        response = await api.client.get("/api/v1/documents", params={"offset": offset})
    assert response.status_code == status
    if status == 422:
        assert response.json()["error"]["field"] == "offset"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (CRAWLS, '{"url": "http://127.0.0.1:9/", "pathPrefix": "/a\\ud800"}', "pathPrefix"),
        (CRAWLS, '{"url": "http://127.0.0.1:9/", "excludePatterns": ["ok", "\\udfff"]}',
         "excludePatterns"),
        ("/api/v1/documents/url", '{"url": "http://127.0.0.1:9/\\ud83d"}', "url"),
    ],
)  # fmt: skip
async def test_lone_surrogates_are_422_before_a_job_starts(
    path: str, body: str, field: str, tmp_path: Path
) -> None:
    """Text that is not valid Unicode is refused naming the field; no crawl slot is used."""
    async with serve_api(tmp_path, max_active_crawls=1) as api:
        refused = await api.client.post(path, content=body, headers=JSON)
        slot_free = await api.client.post(
            CRAWLS, json={"url": "http://127.0.0.1:9/", "maxPages": 1}
        )
    assert refused.status_code == 422
    assert refused.json()["error"]["field"] == field
    assert "nicode" in refused.json()["error"]["message"]
    assert slot_free.status_code == 202


@pytest.mark.parametrize(
    ("max_pages", "status"), [("10.0", 202), ("1e1", 202), ("10.5", 422), ('"10"', 422)]
)
async def test_integral_numbers_are_integers_as_in_json_schema(
    max_pages: str, status: int, tmp_path: Path
) -> None:
    """maxPages 10.0 is the integer 10 (JSON Schema); a string or a fraction is 422."""
    body = f'{{"url": "http://127.0.0.1:9/", "maxPages": {max_pages}}}'
    async with serve_api(tmp_path) as api:
        response = await api.client.post(CRAWLS, content=body, headers=JSON)
    assert response.status_code == status
    if status == 202:
        assert response.json()["applied"]["maxPages"] == 10


@pytest.mark.parametrize(
    ("event_id", "status"),
    [("²".encode("latin-1"), 422), ("\uff15".encode(), 422), (b"x1", 422), (b"0", 200)],
)
async def test_last_event_id_is_ascii_digits_only(
    event_id: bytes, status: int, tmp_path: Path
) -> None:
    """A Last-Event-ID of non-ASCII digits is 422 (not 500, not read as a number)."""
    async with serve_api(tmp_path) as api:
        job = (await api.client.post(CRAWLS, json={"url": "http://127.0.0.1:9/"})).json()
        response = await api.client.get(
            job["links"]["events"], headers={b"last-event-id": event_id}
        )
    assert response.status_code == status


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("OPTIONS", f"{CRAWLS}/some-id", "DELETE, GET"),
        ("PUT", f"{CRAWLS}/some-id", "DELETE, GET"),
        ("PATCH", "/api/v1/documents/some-id", "DELETE, GET"),
        ("PUT", "/api/v1/documents/url", "POST"),
        ("DELETE", CRAWLS, "GET, POST"),  # GET lists the jobs
    ],
)
async def test_405_allow_lists_every_method_of_the_path(
    method: str, path: str, allowed: str, tmp_path: Path
) -> None:
    """Allow names the methods of every route at the path, not just the first one's."""
    async with serve_api(tmp_path) as api:
        response = await api.client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
