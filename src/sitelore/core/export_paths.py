"""Name the file a stored document gets in a Markdown export: inside the folder, one per URL.

``https://docs.example.com:8443/guide/install.html?v=2`` becomes
``docs.example.com_8443/guide/install_<hash>.md``: a folder per host (and port), one
per path segment, ``index`` for a path ending in ``/``, the page's extension
(``.html``, ``.php``...) replaced by ``.md``, and a short hash of the query, so two
URLs differing only there get two files. Every segment is percent-decoded and then
made safe: letters, digits and ``-._~`` stay, anything else (``/``, ``\\``, NUL,
control characters) becomes ``_``; ``.``, ``..`` and names starting with a dot are
changed, and long names are cut (with a hash) to fit any file system's 255 bytes.
A folder never ends in ``.md`` (``/a.md/b`` gets ``a.md_/``): no folder can take the
name of a document's file (``/a``'s ``a.md``). No name can leave the folder. Pure:
no I/O.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

__all__ = ["markdown_path"]

#: Extensions of pages that are replaced by ``.md`` (others are kept: ``a.txt.md``).
_PAGE_EXTENSIONS = re.compile(r"\.(?:s?html?|xhtml|php\d?|aspx?|jsp|cgi|md|markdown)$", re.I)
#: The most bytes of one name (file systems allow 255; room left for a hash and ``.md``).
_NAME_BYTES = 150
_SAFE = frozenset("-._~")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _safe(segment: str) -> str:
    """One path segment as a file name: safe characters only, never hidden, never too long."""
    name = "".join(c if c.isalnum() or c in _SAFE else "_" for c in unquote(segment))
    if name.startswith("."):
        name = "_" + name[1:]
    if len(name.encode("utf-8", "surrogatepass")) > _NAME_BYTES:
        cut = name.encode("utf-8", "surrogatepass")[: _NAME_BYTES - 9]
        name = cut.decode("utf-8", "ignore") + "_" + _digest(name)
    return name or "_"


def markdown_path(url: str) -> PurePosixPath:
    """The relative path of ``url``'s document in a Markdown export.

    >>> str(markdown_path("https://docs.example.com/guide/"))
    'docs.example.com/guide/index.md'
    >>> str(markdown_path("https://a.test:8080/../x/%2e%2e/.env"))
    'a.test_8080/x/_./_env.md'
    """
    parts = urlsplit(url)
    host = (parts.hostname or "_").lower()
    host_dir = _safe(f"{host}_{parts.port}" if parts.port is not None else host)
    segments = [s for s in parts.path.split("/") if s and s not in (".", "..")]
    if not segments or parts.path.endswith("/"):
        segments.append("index")
    *folders, last = segments
    stem = _PAGE_EXTENSIONS.sub("", unquote(last)) or "index"
    if parts.query:
        stem = f"{stem}_{_digest(parts.query)}"
    return PurePosixPath(host_dir, *(_folder(f) for f in folders), _safe(stem) + ".md")


def _folder(segment: str) -> str:
    """A path segment as a folder name: never ``*.md``, the name of a document's file."""
    name = _safe(segment)
    return name + "_" if name.lower().endswith(".md") else name
