"""Turn a PDF body into a document: its text, page by page, titled from its metadata.

Uses pypdf (pure Python, maintained). A PDF that cannot be read raises
``ConversionError``; an encrypted one that needs a password is refused the same way.
Pages are extracted up to a bound so a hostile file cannot make conversion unbounded.
"""

from __future__ import annotations

import io
import logging

from sitelore.core.convert._title import last_path_segment
from sitelore.core.errors import ConversionError
from sitelore.core.models import Document

__all__ = ["pdf_to_document"]

_MAX_PAGES = 500
_MAX_TITLE = 300


def pdf_to_document(body: bytes, url: str) -> Document:
    """A document holding the PDF's text (pages separated by rules), titled from metadata."""
    # Imported here: pypdf loads cryptography (~20 MB of RSS), needed only for PDFs.
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(body), strict=False)
        if reader.is_encrypted:
            raise ConversionError(f"{url}: the PDF is encrypted")
        texts = [
            " ".join((page.extract_text() or "").split("\x00")).strip()
            for page in reader.pages[:_MAX_PAGES]
        ]
        meta_title = reader.metadata.title if reader.metadata else None
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ConversionError(f"{url}: not a readable PDF ({exc})") from exc
    markdown = "\n\n---\n\n".join(text for text in texts if text)
    title = (meta_title or "").strip() or _first_line(markdown) or last_path_segment(url)
    return Document(
        url=url,
        title=title[:_MAX_TITLE],
        markdown=markdown,
        content_type="application/pdf",
    )


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""
