"""The example-site server's validators: ETag, Last-Modified, and 304 to conditional GETs."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from email.utils import formatdate
from pathlib import Path

import aiohttp
import pytest

from sitelore.adapters.demo_site import bundled_site_path, serve_site


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Path, list[tuple[str, int]]]]:
    root = tmp_path / "site"
    shutil.copytree(bundled_site_path(), root)
    os.utime(root / "faq.html", (1_700_000_000, 1_700_000_000))
    log: list[tuple[str, int]] = []
    async with serve_site(root, served=log) as base:
        yield base, root, log


async def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        lowered = {name.lower(): value for name, value in response.headers.items()}
        return response.status, lowered, await response.read()


async def test_files_carry_an_etag_and_last_modified(
    served: tuple[str, Path, list[tuple[str, int]]],
) -> None:
    base, _, _ = served
    status, headers, _ = await get(base + "/faq.html")
    assert status == 200
    assert headers["etag"].startswith('"')
    assert headers["last-modified"] == formatdate(1_700_000_000, usegmt=True)


@pytest.mark.parametrize(
    ("make_header", "expected"),
    [
        (lambda etag: {"If-None-Match": etag}, 304),
        (lambda etag: {"If-None-Match": f'"other", W/{etag}'}, 304),
        (lambda etag: {"If-None-Match": "*"}, 304),
        (lambda etag: {"If-None-Match": '"other"'}, 200),
        (lambda etag: {"If-Modified-Since": formatdate(1_700_000_000, usegmt=True)}, 304),
        (lambda etag: {"If-Modified-Since": formatdate(1_600_000_000, usegmt=True)}, 200),
        (lambda etag: {"If-Modified-Since": "yesterday"}, 200),
        (
            lambda etag: {
                "If-None-Match": '"other"',
                "If-Modified-Since": formatdate(1_800_000_000, usegmt=True),
            },
            200,
        ),
    ],
)
async def test_conditional_requests(
    served: tuple[str, Path, list[tuple[str, int]]],
    make_header: object,
    expected: int,
) -> None:
    base, _, log = served
    _, headers, _ = await get(base + "/faq.html")
    assert callable(make_header)
    status, answer, data = await get(base + "/faq.html", **make_header(headers["etag"]))
    assert status == expected
    if expected == 304:
        assert data == b""
        assert answer["etag"] == headers["etag"]
    assert log[-1] == ("/faq.html", expected)


async def test_editing_a_file_changes_its_etag(
    served: tuple[str, Path, list[tuple[str, int]]],
) -> None:
    base, root, _ = served
    _, before, _ = await get(base + "/faq.html")
    (root / "faq.html").write_text("<p>new</p>", encoding="utf-8")
    status, after, data = await get(base + "/faq.html", **{"If-None-Match": before["etag"]})
    assert status == 200
    assert data == b"<p>new</p>"
    assert after["etag"] != before["etag"]


async def test_a_missing_page_has_no_validators(
    served: tuple[str, Path, list[tuple[str, int]]],
) -> None:
    base, _, log = served
    status, headers, _ = await get(base + "/guide/upgrading.html", **{"If-None-Match": "*"})
    assert status == 404
    assert "etag" not in headers
    assert log == [("/guide/upgrading.html", 404)]
