"""Turn a fetched body into a Document: main content as Markdown, title, links, metadata.

The page's own Content-Type decides: HTML and XHTML are converted (main content
selected and cleaned, then written as Markdown by html-to-markdown; pages without a
docs container take Readability's article when it keeps their code and tables, and
pages with neither give their whole body, chrome removed); plain text and
Markdown are stored as they are; anything else raises
:class:`~sitelore.core.errors.UnsupportedContentTypeError`. Pure: no I/O, no clock.

::

    doc = to_document(body, "text/html; charset=utf-8", "https://docs.example/page.html")
    doc.title, doc.markdown, doc.links
"""

from __future__ import annotations

import dataclasses

from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.charset import decode_body
from sitelore.core.convert._article import article_tree
from sitelore.core.convert._clean import clean_content
from sitelore.core.convert._content import find_content
from sitelore.core.convert._controls import without_controls
from sitelore.core.convert._markdown import content_to_markdown
from sitelore.core.convert._meta import read_meta
from sitelore.core.convert._pdf import pdf_to_document
from sitelore.core.convert._sanity import check_markup
from sitelore.core.convert._text import text_to_document
from sitelore.core.convert._title import choose_title
from sitelore.core.convert._views import PageView, check_selectors, html_view
from sitelore.core.errors import (
    ConversionError,
    ConversionFailedError,
    FetchError,
    UnsupportedContentTypeError,
)
from sitelore.core.links import LinkCache, resolve_links
from sitelore.core.linkstyle import LINK_STYLES, LinkStyle, restyle_links
from sitelore.core.models import Document, split_content_type

__all__ = [
    "HTML_TYPES",
    "LINK_STYLES",
    "TEXT_TYPES",
    "DocumentConverter",
    "LinkStyle",
    "PageView",
    "check_selectors",
    "decode_body",
    "html_to_document",
    "html_view",
    "restyle_links",
    "to_document",
]

#: XHTML: converted as HTML, its charset read from its XML declaration.
XHTML_TYPE = "application/xhtml+xml"
#: Media types converted as HTML.
HTML_TYPES = frozenset({"text/html", XHTML_TYPE})
#: Media types stored as they are.
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
#: Converted to text with pypdf.
PDF_TYPE = "application/pdf"


def html_to_document(html: str, url: str, *, link_cache: LinkCache | None = None) -> Document:
    """Convert an HTML page fetched from ``url`` (its final URL) into a Document.

    ``link_cache`` (one per crawl) remembers resolved hrefs across pages.
    """
    tree = LexborHTMLParser(html)
    meta = read_meta(tree, url)
    links = resolve_links(
        (node.attrs.get("href") or "" for node in tree.css("a[href], area[href]")),
        meta.base_url,
        cache=link_cache,
    )
    body = tree.body
    work_tree = tree
    content: LexborNode | None = None
    title_scope: LexborNode | None = None
    if body is not None:
        content, docs = find_content(body, meta.title)
        article = None if docs else article_tree(html, body, content)
        if content is None and article is None:
            content = body
        if content is not None:
            clean_content(content)
        # The title rules know the page's own landmarks better than Readability's output.
        title_scope = content
        if article is not None and article.body is not None:
            work_tree, content = article, article.body
            clean_content(content)
            title_scope = title_scope or content
    title = choose_title(meta.title, meta.og_title, title_scope, body, url)
    markdown = ""
    if content is not None:
        markdown = content_to_markdown(work_tree, content, meta.base_url, link_cache)
    document = Document(
        url=url,
        title=title,
        markdown=markdown,
        links=links,
        description=meta.description,
        lang=meta.lang,
        canonical_url=meta.canonical_url,
        content_type="text/html",
        noindex=meta.noindex,
        nofollow=meta.nofollow,
    )
    return without_controls(document)


def to_document(
    body: bytes,
    content_type: str,
    url: str,
    *,
    charset: str | None = None,
    link_cache: LinkCache | None = None,
) -> Document:
    """Convert a response body by its own Content-Type; raise for types not converted.

    Whichever converter ran, the document holds no control characters (``_controls``).
    """
    media, header_charset = split_content_type(content_type)
    if media in HTML_TYPES:
        check_markup(body, url)
        text = decode_body(body, charset or header_charset, xml=media == XHTML_TYPE)
        document = html_to_document(text, url, link_cache=link_cache)
        if media != document.content_type:
            document = dataclasses.replace(document, content_type=media)
        return document
    if media in TEXT_TYPES:
        text = decode_body(body, charset or header_charset)
        return without_controls(text_to_document(text, media, url))
    if media == PDF_TYPE:
        return without_controls(pdf_to_document(body, url))
    raise UnsupportedContentTypeError(
        url,
        f"content type {media or 'unknown'!r} is not converted (HTML, text, Markdown, PDF are)",
    )


class DocumentConverter:
    """:func:`to_document` for many pages, sharing a :class:`LinkCache`.

    One per crawl, or one per conversion worker process: the sidebar's hrefs are
    resolved once per directory, not once per page. Call it like ``to_document``, or
    await :meth:`convert` (the ``ports.Converter`` shape, in this process)::

        convert = DocumentConverter()
        doc = convert(body, "text/html", url, charset=None)
        doc = await convert.convert(body, "text/html", url, None)
    """

    __slots__ = ("link_cache",)

    def __init__(self, link_cache: LinkCache | None = None) -> None:
        self.link_cache = link_cache if link_cache is not None else LinkCache()

    def __call__(
        self, body: bytes, content_type: str, url: str, charset: str | None = None
    ) -> Document:
        """Convert one response body, as :func:`to_document` does."""
        return to_document(body, content_type, url, charset=charset, link_cache=self.link_cache)

    async def convert(
        self, body: bytes, content_type: str, url: str, charset: str | None
    ) -> Document:
        """Convert in this process, on the caller's thread (no time cap: tests, tools).

        Raises only typed errors: an unexpected exception of the converter is this
        page's :class:`~sitelore.core.errors.ConversionFailedError`.
        """
        try:
            return self(body, content_type, url, charset)
        except (FetchError, ConversionError):
            raise
        except Exception as exc:
            raise ConversionFailedError(url, f"{type(exc).__name__}: {exc}") from exc
