"""Measure the SQLite store: inserts/s, unchanged re-upserts/s and FTS queries/s.

    .venv/bin/python bench/store_bench.py                 # 1,000 docs of ~20 KB
    .venv/bin/python bench/store_bench.py --docs 5000 --dir /var/tmp

Documents are synthetic Markdown (headings, paragraphs, a code block) drawn from a
Zipf-distributed vocabulary, so the index looks like a real one. Upserts are awaited
one at a time, so each is its own transaction (a crawl's concurrent pages share one).
Latencies are how long one awaited call takes; a file store's writes run on its
writer thread, so CPU per op counts that thread too.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from sitelore.adapters.store import SQLiteStore
from sitelore.core.models import Document, FetchMeta

__all__ = ["main"]

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dor", "fen", "gil")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _markdown(rng: random.Random, words: Sequence[str], weights: Sequence[float], size: int) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        if rng.random() < 0.15:
            part = "## " + " ".join(rng.choices(words, weights, k=4)).title()
        elif rng.random() < 0.05:
            part = (
                "```python\n"
                + "\n".join(f"{w} = {rng.randint(0, 99)}" for w in rng.choices(words, weights, k=6))
                + "\n```"
            )
        else:
            part = " ".join(rng.choices(words, weights, k=rng.randint(40, 90))).capitalize() + "."
        parts.append(part)
        length += len(part) + 2
    return "\n\n".join(parts)


def _documents(count: int, size: int, seed: int) -> tuple[list[Document], list[str]]:
    rng = random.Random(seed)
    words = _vocabulary(rng, 8000)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    docs = [
        Document(
            url=f"https://docs.example/page/{i}",
            title=" ".join(rng.choices(words, weights, k=5)).title(),
            markdown=_markdown(rng, words, weights, size),
        )
        for i in range(count)
    ]
    return docs, words


def _ms(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _report(label: str, latencies: Sequence[float], wall: float, cpu: float) -> None:
    rate = len(latencies) / wall
    print(
        f"{label:<28} {rate:>9,.0f}/s   p50 {_ms(latencies, 0.5):6.2f} ms   "
        f"p99 {_ms(latencies, 0.99):6.2f} ms   max {1000 * max(latencies):6.2f} ms   "
        f"CPU {1000 * cpu / len(latencies):5.2f} ms/op"
    )


async def _run(args: argparse.Namespace, directory: Path) -> None:
    docs, words = _documents(args.docs, args.size, args.seed)
    avg = statistics.mean(len(d.markdown) for d in docs)
    print(f"{len(docs)} documents, average {avg:,.0f} chars of Markdown; db in {directory}")
    meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))
    path = directory / "bench.db"
    store = SQLiteStore(path)
    try:
        for label, batch in (("insert (new)", docs), ("re-upsert (unchanged)", docs)):
            latencies: list[float] = []
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for doc in batch:
                t0 = time.perf_counter()
                await store.upsert(doc, meta)
                latencies.append(time.perf_counter() - t0)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            _report(label, latencies, wall, cpu)

        rng = random.Random(args.seed + 1)
        # Mid-frequency words: common enough to match, rare enough to rank.
        pool = words[50:2000]
        queries = [" ".join(rng.sample(pool, k=1 if i % 2 else 2)) for i in range(args.queries)]
        latencies = []
        hits = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for query in queries:
            t0 = time.perf_counter()
            hits += len(await store.search(query, limit=10))
            latencies.append(time.perf_counter() - t0)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        _report("search (limit 10)", latencies, wall, cpu)
        print(f"{'':<28} {hits / len(queries):.1f} hits per query on average")
    finally:
        await store.close()


def _run_in(args: argparse.Namespace, directory: Path) -> None:
    asyncio.run(_run(args, directory))
    size = sum(p.stat().st_size for p in directory.glob("bench.db*"))
    print(f"database files: {size / 1e6:,.1f} MB")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print one line per phase."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=20_000, help="Markdown chars per doc")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="where to put the database")
    args = parser.parse_args(argv)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            _run_in(args, Path(tmp))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            _run_in(args, Path(tmp))


if __name__ == "__main__":
    main()
