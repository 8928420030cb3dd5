"""Twin URLs: one document served under a directory URL and under its index file.

Static servers answer ``/a/b/`` and ``/a/b/index.html`` (or ``index.htm``) with the
same file, and sites link both. The URL contract (``core.urls``) keeps them apart,
as a server may serve them differently; a crawl stores one document for them only
when they turn out to be the same document: the same twin group
(:func:`twin_urls`: same origin and query, the path equal but for a last
``index.html``/``index.htm`` segment) *and* the same content hash of the converted
text (:func:`~sitelore.core.models.content_hash`). :func:`claim_key` names that pair
for the crawl's claim table (``crawl.port.Lease.claim``).

Never applied to two URLs of different paths (``/v1/x`` and ``/v2/x``), even with
equal text: each stays a document of its own. Pure string work: nothing here fetches
or reads a store.

>>> twin_urls("https://d.test/a/b/")
('https://d.test/a/b/index.html', 'https://d.test/a/b/index.htm')
>>> twin_urls("https://d.test/a/b/index.htm?x=1")
('https://d.test/a/b/?x=1', 'https://d.test/a/b/index.html?x=1')
>>> twin_urls("https://d.test/a/b.html")
()
"""

from __future__ import annotations

import hashlib

__all__ = ["INDEX_FILES", "claim_key", "twin_urls"]

#: The index files a directory URL is taken to serve (Apache's, nginx's and Python's
#: ``http.server`` defaults).
INDEX_FILES: tuple[str, ...] = ("index.html", "index.htm")


def _directory_and_query(url: str) -> tuple[str, str] | None:
    """``(URL up to the directory's slash, "?query" or "")`` of a twin-able URL, else None.

    ``url`` is a normalised URL (``core.urls.normalize_url``): scheme and host are
    already lower case and the fragment is gone.
    """
    base, mark, query = url.partition("?")
    scheme_end = base.find("://")
    if scheme_end < 0 or base.find("/", scheme_end + 3) < 0:
        return None
    head, _, last = base.rpartition("/")
    if last and last not in INDEX_FILES:
        return None
    return head + "/", mark + query


def twin_urls(url: str) -> tuple[str, ...]:
    """The other URLs that may serve the same document as normalised ``url``.

    A directory URL's twins are its index files; an index file's twins are its
    directory and the other index file. Any other URL has none.
    """
    parts = _directory_and_query(url)
    if parts is None:
        return ()
    directory, query = parts
    spellings = (directory + query, *(directory + name + query for name in INDEX_FILES))
    return tuple(spelling for spelling in spellings if spelling != url)


def claim_key(url: str, content_hash: str) -> str:
    """The key one document of ``url``'s twin group with this text is claimed under.

    Equal for twins with equal text, different for anything else; 32 hex digits
    whatever the URL's length (the Redis frontier keeps one per claimed document).
    """
    parts = _directory_and_query(url)
    group = url if parts is None else parts[0] + parts[1]
    digest = hashlib.sha256(group.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(content_hash.encode("ascii", "replace"))
    return digest.hexdigest()[:32]
