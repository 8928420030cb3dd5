"""Give stored sections their vectors off the event loop, and search hybrid when they exist.

Embedding is CPU work: :func:`embed_pending` hands each batch to ``run`` (a thread by
default, :func:`asyncio.to_thread`; any executor fits the port) and writes the vectors
between batches, so a crawl or ``sitelore reindex --semantic`` keeps its event loop
free. :class:`SemanticSearch` decides per query whether search can be hybrid (the
``semantic`` extra is installed and the store holds vectors of the settings' model)
and otherwise searches lexically and says why (to ``on_lexical`` once per reason).
A server makes one for its life, so the model loads on the first hybrid query (not at
import, not per query) and the store keeps its vectors in memory between queries.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

from sitelore.adapters.embedding import (
    Embedder,
    SemanticUnavailableError,
    load_embedder,
    semantic_installed,
)
from sitelore.core.models import SearchHit
from sitelore.core.ports import SectionVectors, Store

__all__ = ["BATCH", "Ranked", "SemanticSearch", "embed_pending", "embedding_alongside"]

#: Sections embedded per call to the model (one write per batch).
BATCH = 64
_EXTRA_MISSING = "the semantic extra is not installed (pip install 'sitelore[semantic]')"

#: Runs ``function(texts)`` away from the event loop.
Run = Callable[[Callable[[Sequence[str]], Any], Sequence[str]], Awaitable[Any]]


async def embed_pending(
    store: SectionVectors,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    run: Run = asyncio.to_thread,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed every section lacking a vector of ``embedder``'s model; how many were done.

    ``progress`` hears the running count after each batch.
    """
    done = 0
    while True:
        items = await store.pending_vectors(embedder.name, batch)
        if not items:
            return done
        rows = await run(embedder.embed, [text for _, text in items])
        keys = [key for key, _ in items]
        vectors = [(key, [float(x) for x in row]) for key, row in zip(keys, rows, strict=True)]
        await store.put_vectors(embedder.name, vectors)
        done += len(items)
        if progress is not None:
            progress(done)


@contextlib.asynccontextmanager
async def embedding_alongside(
    store: Store,
    model: str,
    *,
    load: Callable[[str], Embedder] = load_embedder,
    installed: Callable[[], bool] = semantic_installed,
    pause: float = 1.0,
) -> AsyncIterator[bool]:
    """While the body runs (a crawl), embed the sections it stores; catch up when it ends.

    Only for a store that already holds vectors of ``model`` (``reindex --semantic``
    opted it in) with the extra installed; yields whether it embeds. A body that fails
    or is cancelled stops the embedding at once (what is missing waits for the next
    crawl or reindex).
    """
    if not (installed() and isinstance(store, SectionVectors)):
        yield False
        return
    if not (await store.vector_counts(model))[0]:
        yield False
        return
    embedder = await asyncio.to_thread(load, model)
    stop = asyncio.Event()

    async def keep_up() -> None:
        while True:
            await embed_pending(store, embedder)
            if stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)

    task = asyncio.create_task(keep_up())
    try:
        yield True
    except BaseException:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise
    stop.set()
    await task


@dataclasses.dataclass(frozen=True, slots=True)
class Ranked:
    """Search hits and how they were ranked; ``note`` says why search stayed lexical
    when something could make it hybrid (None for an install without the extra)."""

    hits: builtins.list[SearchHit]
    ranking: Literal["lexical", "hybrid"]
    note: str | None = None


class SemanticSearch:
    """Hybrid search where possible; the model loads on the first hybrid query, once.

    ``on_lexical`` hears each reason search stayed lexical the first time it applies
    (a server logs it; the CLI prints :attr:`Ranked.note` itself).
    """

    def __init__(
        self,
        store: Store,
        model: str,
        *,
        load: Callable[[str], Embedder] = load_embedder,
        installed: Callable[[], bool] = semantic_installed,
        on_lexical: Callable[[str], None] | None = None,
    ) -> None:
        self._store = store
        self._model = model
        self._load = load
        self._installed = installed
        self._on_lexical = on_lexical
        self._said: set[str] = set()
        self._embedder: Embedder | None = None
        self._loading = asyncio.Lock()

    def __repr__(self) -> str:
        state = "model loaded" if self._embedder is not None else "model not loaded"
        return f"SemanticSearch({self._model!r}, {state})"

    async def _why_lexical(self) -> tuple[bool, str | None]:
        """Whether search stays lexical, and why when there is something to do about it.

        Without the semantic extra and without vectors, lexical is simply how this
        install searches: nothing is said (a note on every search, pointing at a
        ``reindex --semantic`` that would fail, was noise).
        """
        store = self._store
        installed = self._installed()
        if not isinstance(store, SectionVectors):
            return True, "this store keeps no section vectors" if installed else None
        vectors = await store.has_vectors(self._model)
        if vectors and installed:
            return False, None
        if not installed:
            return True, _EXTRA_MISSING if vectors else None
        return True, f"no section vectors of model {self._model} (sitelore reindex --semantic)"

    async def _model_embedder(self) -> Embedder:
        """The embedder, loaded (off the event loop) by the first query that needs it."""
        async with self._loading:
            if self._embedder is None:
                self._embedder = await asyncio.to_thread(self._load, self._model)
            return self._embedder

    async def search(self, query: str, *, limit: int = 10) -> Ranked:
        """The best pages for ``query``: fused lexical and vector ranks, or lexical alone.

        The search of every surface (CLI, REST, MCP, web UI). Hybrid when the store holds
        section vectors of this model and the semantic extra is installed (the model loads
        on the first such query, once per searcher); else lexical, with ``Ranked.note``
        saying why. A blank query finds nothing.
        """
        if not query.strip():
            return Ranked([], "lexical")
        store = self._store
        lexical, why = await self._why_lexical()
        if not lexical and isinstance(store, SectionVectors):
            try:
                embedder = await self._model_embedder()
                rows = await asyncio.to_thread(embedder.embed, [query])
            except SemanticUnavailableError as exc:
                why = str(exc)
            else:
                vector = [float(x) for x in rows[0]]
                hits = await store.hybrid_search(query, vector, self._model, limit=limit)
                return Ranked(hits, "hybrid")
        note = f"search is lexical: {why}" if why is not None else None
        if note is not None and self._on_lexical is not None and note not in self._said:
            self._said.add(note)
            self._on_lexical(note)
        hits = await store.search(query, limit=limit)
        return Ranked(hits, "lexical", note)
