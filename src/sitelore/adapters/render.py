"""Render JavaScript-only pages in headless Chromium, with every request served by our fetcher.

This adapter owns Playwright (the ``sitelore[render]`` extra) and uses the system
Chromium when one is installed. The browser never touches the network itself: every
request it makes is intercepted. The page's own document is answered with the bytes
sitelore already fetched; scripts, stylesheets, XHR and fetch calls are fetched
through the one egress path (:class:`~sitelore.core.ports.Fetcher`: address guard, caps,
timeouts) and handed back; images, fonts, media, websockets and non-GET requests
are aborted. So rendering adds no new way for a page to reach a private address.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from typing import Self

from playwright.async_api import Browser, Playwright, Request, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from sitelore.core.errors import SiteloreError, UsageError
from sitelore.core.models import Headers, Snapshot
from sitelore.core.ports import Fetcher, SubFetch

__all__ = ["PlaywrightRenderer", "find_chromium"]

log = logging.getLogger(__name__)

_FETCHED_TYPES = frozenset({"document", "script", "stylesheet", "xhr", "fetch"})
#: Headers that describe the fetched body, not the rendered one.
_BODY_HEADERS = frozenset({"content-type", "content-length"})
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str | None:
    """The system Chromium to drive (``SITELORE_CHROMIUM`` wins), or None."""
    explicit = os.environ.get("SITELORE_CHROMIUM")
    if explicit:
        return explicit
    for name in _CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclasses.dataclass(kw_only=True, eq=False)
class PlaywrightRenderer:
    """Turns a fetched HTML snapshot into the HTML its scripts produce.

    Args:
        fetcher: serves every sub-request the page makes (already entered).
        user_agent: the browser's User-Agent (the crawl's honest one).
        timeout: seconds for one page to settle (network idle).
        max_requests: sub-requests allowed per page; the rest are aborted.
        max_bytes: cap on each sub-request's body.
    """

    fetcher: Fetcher
    user_agent: str
    timeout: float = 15.0
    max_requests: int = 50
    max_bytes: int = 5 * 1024 * 1024
    #: The Chromium to drive (default: :func:`find_chromium`'s, looked up when built).
    executable: str | None = None
    _playwright: Playwright | None = dataclasses.field(default=None, init=False)
    _browser: Browser | None = dataclasses.field(default=None, init=False)

    def __post_init__(self) -> None:
        self.executable = self.executable or find_chromium()

    async def _fetch(self, url: str) -> Snapshot:
        return await self.fetcher.fetch(url, max_bytes=self.max_bytes)

    async def __aenter__(self) -> Self:
        if self.executable is None:
            raise UsageError(
                "--render: no Chromium found; install the system package "
                "(apt-get install chromium) or set SITELORE_CHROMIUM"
            )
        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable, args=list(_CHROMIUM_ARGS)
            )
        except PlaywrightError as exc:
            await self._playwright.stop()
            raise UsageError(
                f"--render: Chromium at {self.executable} did not start: {exc}"
            ) from exc
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._playwright is not None:
            await self._playwright.stop()

    async def render(self, snapshot: Snapshot, *, fetch: SubFetch | None = None) -> Snapshot:
        """Return ``snapshot`` with its body replaced by the rendered DOM (UTF-8 HTML).

        ``fetch`` serves each sub-request (the crawl's: robots.txt, spacing); without
        it the renderer's own fetcher is used. When it raises, that request is aborted.
        """
        sub_fetch = fetch or self._fetch
        if self._browser is None:
            raise RuntimeError("PlaywrightRenderer used outside 'async with'")
        context = await self._browser.new_context(
            user_agent=self.user_agent, service_workers="block", accept_downloads=False
        )
        budget = _Budget(self.max_requests)
        try:
            page = await context.new_page()
            await page.route(
                "**/*",
                lambda route, request: self._serve(route, request, snapshot, budget, sub_fetch),
            )
            try:
                await page.goto(
                    snapshot.final_url, wait_until="networkidle", timeout=self.timeout * 1000
                )
            except PlaywrightError as exc:
                log.info("render of %s did not settle: %s", snapshot.final_url, exc)
            html = await page.content()
        finally:
            await context.close()
        kept = [(k, v) for k, v in snapshot.headers if k.lower() not in _BODY_HEADERS]
        headers = Headers.of([*kept, ("Content-Type", "text/html; charset=utf-8")])
        return dataclasses.replace(snapshot, body=html.encode("utf-8"), headers=headers)

    async def _serve(
        self,
        route: Route,
        request: Request,
        snapshot: Snapshot,
        budget: _Budget,
        fetch: SubFetch,
    ) -> None:
        if request.is_navigation_request() and request.url == snapshot.final_url and budget.first:
            budget.first = False
            await route.fulfill(
                status=200,
                headers={"Content-Type": snapshot.headers.get("content-type") or "text/html"},
                body=snapshot.body,
            )
            return
        if (
            request.method != "GET"
            or request.resource_type not in _FETCHED_TYPES
            or not budget.take()
        ):
            await route.abort()
            return
        try:
            response = await fetch(request.url)
        except (TimeoutError, SiteloreError) as exc:
            log.debug("render sub-request refused %s: %s", request.url, exc)
            await route.abort()
            return
        content_type = response.headers.get("content-type") or "application/octet-stream"
        await route.fulfill(
            status=response.status, headers={"Content-Type": content_type}, body=response.body
        )


@dataclasses.dataclass(slots=True)
class _Budget:
    """How many sub-requests one page may still make."""

    left: int
    first: bool = True

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True
