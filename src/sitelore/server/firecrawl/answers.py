"""Firecrawl's answer shapes: documents with metadata, paged job status, errors.

Builds the JSON of one page (``markdown``, ``html``, ``rawHtml``, ``links``,
``metadata``) from what sitelore stored and, when asked for more than the stored
Markdown, from the page's kept response; and the ``{"success": false, "error"}``
answers with their HTTP status. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sitelore.app.service import PageFailedError, remote_message
from sitelore.core.convert import HTML_TYPES, decode_body, html_view, to_document
from sitelore.core.errors import (
    BlockedURLError,
    BusyError,
    FetchTimeoutError,
    NotFoundError,
    RobotsDeniedError,
    RobotsRefusedError,
    SiteloreError,
    UsageError,
)
from sitelore.core.models import Snapshot, StoredDocument
from sitelore.core.sections import strip_heading_ids
from sitelore.server.firecrawl.translate import Wanted

__all__ = [
    "PAGE_SIZE",
    "PREFIX",
    "RETRY_AFTER_SECONDS",
    "JobEndedError",
    "Page",
    "document",
    "error_answer",
    "refusal",
    "status_page",
]

#: Where the Firecrawl-compatible routes live.
PREFIX = "/v2"

#: Documents per page of a job's status; ``next`` names the following page.
PAGE_SIZE = 10
#: How long a job's results are promised to stay (Firecrawl's ``expiresAt``).
KEPT_FOR = timedelta(hours=24)


class JobEndedError(SiteloreError):
    """A cancel asked of a job that has already ended (Firecrawl's 409)."""


#: Error class -> Firecrawl's status and the code of an error that names no page kind
#: (the REST API's code for the same class); the first that matches wins.
_STATUS: Sequence[tuple[type[BaseException] | tuple[type[BaseException], ...], int, str]] = (
    ((BlockedURLError, RobotsRefusedError, RobotsDeniedError), 403, "blocked"),  # by policy
    (JobEndedError, 409, "job-ended"),
    (NotFoundError, 404, "not-found"),
    (BusyError, 429, "busy"),
    (FetchTimeoutError, 408, "timeout"),
    (UsageError, 400, "usage"),
)
#: Seconds a client told 429 (every crawl slot taken) waits before asking again.
RETRY_AFTER_SECONDS = 30


def refusal(code: str, message: str) -> dict[str, Any]:
    """The body of a refused request, in Firecrawl's shape."""
    return {"success": False, "code": code, "error": message}


def error_answer(exc: SiteloreError) -> tuple[int, dict[str, Any]]:
    """The status and body of a failed request.

    A page that could not be fetched answers 500, not 502: the SDKs re-send a request
    answered 502, which would fetch the target again.
    """
    klass = exc.error_class if isinstance(exc, PageFailedError) else type(exc)
    status, code = next(
        ((status, code) for base, status, code in _STATUS if issubclass(klass, base)),
        (500, "internal"),
    )
    return status, refusal(str(exc.kind or code), remote_message(exc))


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """What is known of one fetched page, for :func:`document`."""

    url: str
    final_url: str | None = None
    status: int | None = None
    stored: StoredDocument | None = None
    snapshot: Snapshot | None = None
    error: str | None = None
    cached: bool = False


def _metadata(page: Page) -> dict[str, Any]:
    stored, snap = page.stored, page.snapshot
    meta: dict[str, Any] = {
        "sourceURL": page.url,
        "url": page.final_url or (stored.url if stored else page.url),
        "statusCode": page.status if page.status is not None else (stored and stored.status),
        "contentType": (
            snap.headers.get("content-type") if snap else (stored.content_type if stored else None)
        ),
        "cacheState": "hit" if page.cached else "miss",
    }
    if stored is not None:
        meta.update(title=stored.title, description=stored.description, language=stored.lang)
        meta["cachedAt"] = stored.fetched_at.isoformat().replace("+00:00", "Z")
        meta["documentId"] = stored.id
    if page.error is not None:
        meta["error"] = page.error
    return {key: value for key, value in meta.items() if value is not None}


def document(page: Page, want: Wanted) -> dict[str, Any]:
    """One page in Firecrawl's shape, with the formats ``want`` asks for."""
    out: dict[str, Any] = {}
    snap = page.snapshot
    final = page.final_url or page.url
    html_page = snap is not None and snap.content_type in HTML_TYPES
    view = None
    if snap is not None and html_page and (not want.default_cut or "html" in want.formats):
        view = html_view(
            decode_body(snap.body, snap.charset),
            final,
            only_main_content=want.only_main_content,
            include_tags=want.include_tags,
            exclude_tags=want.exclude_tags,
        )
    if "markdown" in want.formats:
        if view is not None and not want.default_cut:
            markdown = view.markdown
        else:
            markdown = page.stored.markdown if page.stored else ""
        out["markdown"] = strip_heading_ids(markdown)  # Firecrawl's Markdown has no {#id}
    if "html" in want.formats:
        out["html"] = view.html if view is not None else None
    if "rawHtml" in want.formats:
        out["rawHtml"] = decode_body(snap.body, snap.charset) if snap is not None else None
    if "links" in want.formats:
        links: Sequence[str] = ()
        if snap is not None and html_page:
            links = to_document(snap.body, snap.content_type, final, charset=snap.charset).links
        out["links"] = list(links)
    out["metadata"] = _metadata(page)
    return out


def status_page(
    *,
    status: str,
    data: Sequence[Mapping[str, Any]],
    skip: int,
    completed: int,
    total: int,
    running: bool,
    created_at: datetime,
    next_base: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One page of a crawl's or batch's status: ``data`` holds documents from ``skip`` on.

    While the job runs, ``next`` always names the position after this page (more may
    come); once it has ended, only when more of the ``completed`` documents are left.
    """
    after = skip + len(data)
    answer: dict[str, Any] = {
        "success": True,
        "status": status,
        "completed": completed,
        "total": total,
        "creditsUsed": total,
        "expiresAt": (created_at + KEPT_FOR).isoformat().replace("+00:00", "Z"),
        "next": f"{next_base}?skip={after}" if after < completed or running else None,
        "data": list(data),
    }
    answer.update(extra or {})
    return answer
