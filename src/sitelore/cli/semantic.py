"""The semantic side of the CLI: ``reindex --semantic`` with its progress bar, hybrid ``search``.

Kept apart from :mod:`sitelore.cli.main` so that commands that never embed load nothing of
the ``semantic`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitelore.adapters.embedding import load_embedder
from sitelore.app.semantic import Ranked, SemanticSearch, embed_pending
from sitelore.cli.common import err_console, reading_store
from sitelore.cli.output import ProgressBar
from sitelore.core.errors import ConfigError
from sitelore.core.models import SearchHit
from sitelore.core.ports import SectionVectors

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

    from sitelore.core.config import Settings

__all__ = ["embed_store", "hits_of", "ranking_json", "search_store"]


async def search_store(location: str, model: str, query: str, limit: int) -> Ranked:
    """Search the store at ``location`` as the servers do, hybrid (``model``) where it can be."""
    async with reading_store(location) as store:
        return await SemanticSearch(store, model).search(query, limit=limit)


async def embed_store(settings: Settings, *, show_progress: bool) -> tuple[int, int]:
    """Re-cut every document, then embed every section; (documents, sections embedded)."""
    from sitelore.app.bootstrap import Runtime

    embedder = load_embedder(settings.semantic_model)
    async with Runtime(settings, create_store=False) as runtime:
        store = runtime.store
        if not isinstance(store, SectionVectors):
            raise ConfigError(f"{settings.store}: this store cannot keep section vectors")
        documents = await store.reindex()
        _, total = await store.vector_counts(embedder.name)
        with _Bar(err_console, total=total, enabled=show_progress) as bar:
            sections = await embed_pending(store, embedder, progress=bar.update)
        return documents, sections


class _Bar(ProgressBar):
    """A progress bar of sections embedded, on a terminal; else nothing."""

    def _columns(self) -> tuple[ProgressColumn, ...]:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        return (TextColumn("[bold]embed"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())

    def update(self, done: int) -> None:
        self._update(completed=done)


def hits_of(ranked: Ranked) -> list[SearchHit]:
    """The hits, after saying once on stderr why search stayed lexical (if it did)."""
    if ranked.note:
        err_console.print(f"sitelore: {ranked.note}", markup=False)
    return ranked.hits


def ranking_json(ranked: Ranked) -> dict[str, Any]:
    """The ``ranking`` fields of ``search --json``."""
    return {"ranking": ranked.ranking, **({"rankingNote": ranked.note} if ranked.note else {})}
