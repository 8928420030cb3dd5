"""The web UI's search and document pages: search, list with filters, view, delete.

Search results show the section a hit is in when the store gives one (``heading_path``
and ``anchor_url``; a hit without an anchor URL opens the document at its top).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Query, Request, Response

from sitelore.app import service
from sitelore.app.bootstrap import Runtime
from sitelore.app.semantic import SemanticSearch
from sitelore.core.errors import NotFoundError
from sitelore.core.models import SearchHit, StoredDocument
from sitelore.server.web.markdown import render_markdown, section_id
from sitelore.server.web.views import Pages, host_of, read_form, redirect

__all__ = ["PAGE_SIZE", "SCAN_LIMIT", "DocumentFilter", "document_routes"]

PAGE_SIZE = 25
#: Filtered listings look at this many of the most recently updated documents at most.
SCAN_LIMIT = 5000
_BATCH = 250


@dataclasses.dataclass(frozen=True, slots=True)
class ResultView:
    """One search result as the page shows it."""

    title: str
    url: str
    snippet: str
    headings: tuple[str, ...]
    href: str

    @property
    def snippet_parts(self) -> list[tuple[str, bool]]:
        """The snippet as (text, is a match) pieces: the store marks matches with ``**``."""
        pieces = self.snippet.split("**")
        if len(pieces) % 2 == 0:  # an unpaired marker: keep it as text
            pieces[-2:] = ["**".join(pieces[-2:])]
        return [(text, index % 2 == 1) for index, text in enumerate(pieces) if text]


def result_view(hit: SearchHit) -> ResultView:
    """Shape a hit; a hit without a section (no anchor URL) opens the document at its top."""
    fragment = urlsplit(hit.anchor_url).fragment if hit.anchor_url else ""
    href = f"/documents/{hit.id}" + (f"#{section_id(fragment)}" if fragment else "")
    return ResultView(hit.title or hit.url, hit.url, hit.snippet, hit.heading_path, href)


_DEFAULT_PORTS = {"http": 80, "https": 443}
#: ``name:port`` or ``[v6 address]:port``.
_WITH_PORT = re.compile(r"(?:\[[^\]]*\]|[^:\[\]]+):[0-9]+")


def _on_host(url: str, wanted: str) -> bool:
    """Whether ``url`` is on host ``wanted``: a name, or ``name:port`` as a URL writes it."""
    wanted = wanted.lower()
    if _WITH_PORT.fullmatch(wanted):
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)  # stored URLs drop 80 and 443
        host, _, asked = wanted.rpartition(":")
        return host.strip("[]") == host_of(url) and asked == str(port)
    return host_of(url) == wanted.strip("[]")


@dataclasses.dataclass(frozen=True, slots=True)
class DocumentFilter:
    """The document list's filters; empty fields filter nothing."""

    prefix: str = ""  #: a named source's URL (documents under it)
    host: str = ""
    status: int | None = None
    removed: str = ""  #: "", "live" or "removed"

    @property
    def active(self) -> bool:
        """True when any filter is set."""
        return bool(self.prefix or self.host or self.status is not None or self.removed)

    def matches(self, doc: StoredDocument) -> bool:
        """True when ``doc`` passes every filter."""
        removed = doc.removed_at is not None
        return (
            (not self.prefix or doc.url.startswith(self.prefix))
            and (not self.host or _on_host(doc.url, self.host))
            and (self.status is None or doc.status == self.status)
            and (self.removed != "live" or not removed)
            and (self.removed != "removed" or removed)
        )


async def _filtered(
    runtime: Runtime, where: DocumentFilter, offset: int
) -> tuple[list[StoredDocument], int, bool]:
    """One page of matching documents, the matches counted, whether the scan was cut."""
    store = runtime.store
    if not where.active:
        return await store.list(limit=PAGE_SIZE, offset=offset), await store.count(), False
    matches: list[StoredDocument] = []
    seen = total = 0
    while seen < SCAN_LIMIT:
        batch = await store.list(limit=_BATCH, offset=seen)
        seen += len(batch)
        for doc in batch:
            if where.matches(doc):
                if offset <= total < offset + PAGE_SIZE:
                    matches.append(doc)
                total += 1
        if len(batch) < _BATCH:
            return matches, total, False
    return matches, total, True


def document_routes(runtime: Runtime, pages: Pages, searcher: SemanticSearch) -> APIRouter:
    """The search and document pages over ``runtime``'s store (search through ``searcher``)."""
    router = APIRouter(include_in_schema=False)
    store = runtime.store
    sources = runtime.settings.sources

    @router.get("/")
    async def search(request: Request, q: Annotated[str, Query(max_length=500)] = "") -> Response:
        query = q.strip()
        ranked = await searcher.search(query, limit=20)
        context = {
            "q": query,
            "results": [result_view(hit) for hit in ranked.hits],
            "ranking": ranked.ranking,
            "ranking_note": ranked.note,
        }
        return pages.render(request, "search.html", context)

    @router.get("/documents")
    async def documents(
        request: Request,
        source: str = "",
        host: Annotated[str, Query(max_length=255)] = "",
        status: Annotated[int | None, Query(ge=100, le=599)] = None,
        removed: Annotated[str, Query(pattern="^(|live|removed)$")] = "",
        page: Annotated[int, Query(ge=1, le=10_000)] = 1,
        deleted: str = "",
    ) -> Response:
        spec = sources.get(source)
        where = DocumentFilter(spec.url if spec else "", host.strip(), status, removed)
        docs, total, cut = await _filtered(runtime, where, (page - 1) * PAGE_SIZE)
        shown = "" if status is None else str(status)
        params = {"source": source, "host": host, "removed": removed, "status": shown}
        query = urlencode({k: v for k, v in params.items() if v})

        def page_href(n: int) -> str:
            return "/documents?" + (f"{query}&" if query else "") + f"page={n}"

        last = max(1, -(-total // PAGE_SIZE))
        return pages.render(
            request,
            "documents.html",
            {
                "docs": docs,
                "total": total,
                "cut": cut,
                "scan_limit": SCAN_LIMIT,
                "page": page,
                "prev_href": page_href(page - 1) if page > 1 else None,
                "next_href": page_href(page + 1) if page < last else None,
                "last": last,
                "sources": sorted(sources),
                "deleted": bool(deleted),
                "f": {"source": source, "host": host, "status": status, "removed": removed},
            },
        )

    @router.get("/documents/{document_id}")
    async def document(request: Request, document_id: str, view: str = "rendered") -> Response:
        try:
            doc = await service.get_document(store, document_id)
        except NotFoundError as exc:
            return pages.render(request, "error.html", {"message": str(exc)}, status=404)
        capture = await runtime.capture_of(doc.id)
        return pages.render(
            request,
            "document.html",
            {
                "doc": doc,
                "view": view if view in ("rendered", "raw", "provenance") else "rendered",
                "html": render_markdown(doc.markdown),
                "capture": capture,
            },
        )

    @router.post("/documents/{document_id}/delete")
    async def delete(request: Request, document_id: str) -> Response:
        await read_form(request)
        try:
            await service.delete_document(store, document_id)
        except NotFoundError as exc:
            return pages.render(request, "error.html", {"message": str(exc)}, status=404)
        return redirect("/documents?deleted=1")

    return router
