"""Export the store as a folder of Markdown files, one per document, with its provenance.

Each document is written to ``core.export_paths.markdown_path`` of its URL under the
folder, as a front matter block (title, URL, id, fetch time, content hash, status;
YAML, strings double-quoted) and then its Markdown, its links in the
style asked for. Two URLs that map to one file (``/a/`` and ``/a/index.html``) get
two files: the second one's name ends with its document id. A file is written whole
or not at all (a temporary file renamed over it), and never outside the folder,
even through a symbolic link already in it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path, PurePosixPath

from sitelore.core.errors import ConfigError
from sitelore.core.export_paths import markdown_path
from sitelore.core.linkstyle import LinkStyle, restyle_links
from sitelore.core.models import StoredDocument
from sitelore.core.ports import Store

__all__ = ["export_markdown", "front_matter"]

_PAGE = 200
#: Characters a JSON string may hold raw that YAML reads otherwise: DEL and C1
#: controls are not allowed in a YAML stream, NEL and the Unicode line and paragraph
#: separators are line breaks there (folded into a space), BOM and non-characters.
_NOT_YAML = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _scalar(value: object) -> str:
    """``value`` as YAML reads it back: a string double-quoted (JSON), a number bare."""
    text = json.dumps(value, ensure_ascii=False)
    return _NOT_YAML.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def front_matter(document: StoredDocument) -> str:
    """The YAML block a document's file starts with (JSON strings are YAML scalars)."""
    fields = {
        "title": document.title,
        "url": document.url,
        "id": document.id,
        "fetched_at": document.fetched_at.isoformat(),
        "content_hash": document.content_hash,
        "status": document.status,
    }
    lines = [f"{name}: {_scalar(value)}" for name, value in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


def _unique(path: PurePosixPath, document_id: str, taken: set[str]) -> PurePosixPath:
    """``path``, or its name with the document id added when another document has it.

    Names are compared case-folded: on a case-insensitive file system they are one file.
    """
    stem, number = path.stem, 0
    while path.as_posix().casefold() in taken:  # a URL may spell another's renamed name
        number += 1
        suffix = f"-{document_id}" + (f"-{number}" if number > 1 else "")
        path = path.with_name(f"{stem}{suffix}{path.suffix}")
    taken.add(path.as_posix().casefold())
    return path


def _write(root: Path, relative: PurePosixPath, text: str) -> None:
    target = root.joinpath(*relative.parts)
    if not target.parent.resolve().is_relative_to(root.resolve()):
        raise ConfigError(f"{root}: {relative.parent} leads out of the export folder (a link?)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".sitelore-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _write_batch(
    folder: Path, documents: list[StoredDocument], style: LinkStyle, taken: set[str]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for document in documents:
        path = _unique(markdown_path(document.url), document.id, taken)
        body = restyle_links(document.markdown, style).rstrip("\n") + "\n"
        _write(folder, path, front_matter(document) + body)


async def export_markdown(store: Store, folder: Path, *, style: LinkStyle = "inline") -> int:
    """Write every document as a Markdown file under ``folder``; return how many.

    Raises ``ConfigError`` naming the folder (or file) when it cannot be written.
    """
    taken: set[str] = set()
    written = 0
    try:
        while batch := await store.list(limit=_PAGE, offset=written):
            await asyncio.to_thread(_write_batch, folder, batch, style, taken)
            written += len(batch)
    except OSError as exc:
        where = exc.filename or folder
        raise ConfigError(f"{where}: cannot write the export: {exc.strerror or exc}") from exc
    return written
