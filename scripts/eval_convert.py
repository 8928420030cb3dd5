"""Score the HTML converter on the Debian docs eval set and print a table per group.

Metrics (see shared/research/extraction.md, section 2):

- F1: bag-of-words overlap of the Markdown (syntax and link targets stripped) with
  ``gt_text``; tokens are ``[^\\W_]+`` lower-cased; averaged over pages.
- code: share of ``gt_pre`` blocks (whitespace removed, first 80 characters) found
  inside a fenced block of the output.
- lang: fenced blocks with an info string holding a ``gt_pre`` block, over
  ``gt_pre_lang`` (capped per page).
- tables: pipe-table rows plus leftover ``<tr>``, over ``gt_table_rows`` (capped).
- leak: share of pages where any ``boiler`` link text shows up in the output.
- title: output title equal to ``gt_title`` once case and punctuation are ignored.
- pages/s: conversion calls only, one process, HTML already decoded.

Usage: ``python scripts/eval_convert.py [--data PATH] [--group NAME] [--worst N]``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gzip
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sitelore.convert import html_to_document

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "eval" / "docs_debian.jsonl.gz"
FALLBACK_DATA = Path("/work/shared/eval/docs_debian.jsonl.gz")
GOALS = {"f1": 0.975, "code": 0.99, "lang": 0.98, "tables": 0.98, "leak": 0.01, "title": 0.95}
MIN_PAGES_PER_SECOND = 50.0

_TOKEN = re.compile(r"[^\W_]+")
_FENCE_OPEN = re.compile(r"^((?:\s*>)*\s*)(`{3,}|~{3,})\s*([^`\s]*)")
_LINK_TARGET = re.compile(r"\]\((?:<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HTML_ROW = re.compile(r"<tr[\s>]", re.IGNORECASE)


@dataclasses.dataclass
class Page:
    group: str
    f1: float
    precision: float
    recall: float
    pre: int
    pre_found: int
    lang_wanted: int
    lang_found: int
    rows: int
    rows_found: int
    leaked: bool
    title_ok: bool
    title: str
    gt_title: str
    seconds: float
    id: str


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def fenced_blocks(markdown: str) -> tuple[list[tuple[str, str]], str]:
    """Return ([(info, code)], prose) where prose is the Markdown outside fences."""
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE_OPEN.match(lines[i])
        if match is None:
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, info = match.groups()
        closing = re.compile(rf"^(?:\s*>)*\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        i += 1
        while i < len(lines) and closing.match(lines[i]) is None:
            line = lines[i]
            if line.startswith(indent):
                line = line[len(indent) :]
            elif line.strip() == indent.strip():
                line = ""
            body.append(line)
            i += 1
        i += 1
        blocks.append((info, "\n".join(body)))
    return blocks, "\n".join(prose)


def plain_text(markdown: str) -> str:
    blocks, prose = fenced_blocks(markdown)
    prose = _LINK_TARGET.sub("]", prose)
    return prose + "\n" + "\n".join(code for _, code in blocks)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def bag_f1(got: list[str], want: list[str]) -> tuple[float, float, float]:
    if not got and not want:
        return 1.0, 1.0, 1.0
    if not got or not want:
        return 0.0, 0.0, 0.0
    overlap = sum((collections.Counter(got) & collections.Counter(want)).values())
    precision, recall = overlap / len(got), overlap / len(want)
    f1 = 0.0 if overlap == 0 else 2 * precision * recall / (precision + recall)
    return f1, precision, recall


def table_rows(markdown: str) -> int:
    _, prose = fenced_blocks(markdown)
    rows = 0
    for line in prose.split("\n"):
        stripped = line.strip()
        piped = stripped.startswith("|") or stripped.endswith("|")
        if piped and not _TABLE_SEPARATOR.match(stripped):
            rows += 1
    return rows + len(_HTML_ROW.findall(prose))


def score(record: dict[str, Any]) -> Page:
    start = time.perf_counter()
    document = html_to_document(record["html"], record["url"])
    seconds = time.perf_counter() - start
    markdown = document.markdown
    f1, precision, recall = bag_f1(tokens(plain_text(markdown)), tokens(record["gt_text"]))
    blocks = [(info, squash(code)) for info, code in fenced_blocks(markdown)[0]]
    pre_found = lang_found = 0
    for pre in record["gt_pre"]:
        key = squash(pre)[:80]
        hits = [info for info, code in blocks if key in code]
        if hits:
            pre_found += 1
            if any(hits):
                lang_found += 1
    rows = record["gt_table_rows"]
    normalized = " " + " ".join(tokens(plain_text(markdown))) + " "
    leaked = any(f" {boiler} " in normalized for boiler in record["boiler"])
    title_ok = tokens(document.title) == tokens(record["gt_title"])
    return Page(
        group=record["group"],
        f1=f1,
        precision=precision,
        recall=recall,
        pre=len(record["gt_pre"]),
        pre_found=pre_found,
        lang_wanted=record["gt_pre_lang"],
        lang_found=min(lang_found, record["gt_pre_lang"]),
        rows=rows,
        rows_found=min(table_rows(markdown), rows),
        leaked=leaked,
        title_ok=title_ok,
        title=document.title,
        gt_title=record["gt_title"],
        seconds=seconds,
        id=record["id"],
    )


def ratio(found: int, wanted: int) -> float | None:
    return found / wanted if wanted else None


def summarize(pages: list[Page]) -> dict[str, float | None]:
    seconds = sum(page.seconds for page in pages)
    return {
        "pages": float(len(pages)),
        "f1": sum(page.f1 for page in pages) / len(pages),
        "precision": sum(page.precision for page in pages) / len(pages),
        "recall": sum(page.recall for page in pages) / len(pages),
        "code": ratio(sum(p.pre_found for p in pages), sum(p.pre for p in pages)),
        "lang": ratio(sum(p.lang_found for p in pages), sum(p.lang_wanted for p in pages)),
        "tables": ratio(sum(p.rows_found for p in pages), sum(p.rows for p in pages)),
        "leak": sum(page.leaked for page in pages) / len(pages),
        "title": sum(page.title_ok for page in pages) / len(pages),
        "pages_per_s": len(pages) / seconds if seconds else None,
    }


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def row(name: str, stats: dict[str, float | None]) -> str:
    f1, p, r = stats["f1"], stats["precision"], stats["recall"]
    assert f1 is not None
    assert p is not None
    assert r is not None
    speed = stats["pages_per_s"]
    return (
        f"| {name} | {int(stats['pages'] or 0)} | {f1:.3f} ({p:.2f}/{r:.2f}) | "
        f"{pct(stats['code'])} | {pct(stats['lang'])} | {pct(stats['tables'])} | "
        f"{pct(stats['leak'])} | {pct(stats['title'])} | "
        f"{'-' if speed is None else f'{speed:.0f}'} |"
    )


def load(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def goal_line(stats: dict[str, float | None], speed: float) -> tuple[str, bool]:
    checks = []
    for key, goal in GOALS.items():
        value = stats[key]
        ok = value is not None and (value <= goal if key == "leak" else value >= goal)
        shown = f"{value:.3f}" if key == "f1" and value is not None else pct(value)
        checks.append((f"{key} {shown} ({'<=' if key == 'leak' else '>='} {goal})", ok))
    checks.append(
        (f"pages/s {speed:.0f} (>= {MIN_PAGES_PER_SECOND:.0f})", speed >= MIN_PAGES_PER_SECOND)
    )
    text = "; ".join(f"{label} {'ok' if ok else 'MISS'}" for label, ok in checks)
    return text, all(ok for _, ok in checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--group", help="score one group only")
    parser.add_argument("--worst", type=int, default=0, help="list the N lowest-F1 pages")
    args = parser.parse_args()
    data: Path = args.data
    if not data.exists() and data == DEFAULT_DATA and FALLBACK_DATA.exists():
        data = FALLBACK_DATA
    if not data.exists():
        print(f"eval data not found: {data}", file=sys.stderr)
        return 2
    records = [r for r in load(data) if args.group in (None, r["group"])]
    import trafilatura  # noqa: F401  (import cost is not conversion time)

    html_to_document(records[0]["html"], records[0]["url"])  # warm up
    pages = [score(record) for record in records]
    # Speed: a second, timing-only pass (the first one also paid for scoring).
    start = time.perf_counter()
    for record in records:
        html_to_document(record["html"], record["url"])
    speed = len(records) / (time.perf_counter() - start)

    by_group: dict[str, list[Page]] = collections.defaultdict(list)
    for page in pages:
        by_group[page.group].append(page)
    print(f"data: {data}")
    print("| group | pages | F1 (P/R) | code | lang | tables | leak | title | pages/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for group in sorted(by_group):
        print(row(group, summarize(by_group[group])))
    overall = summarize(pages)
    print(row("**overall**", overall))
    print(f"\nsingle-core speed: {speed:.1f} pages/s over {len(records)} pages")
    if args.worst:
        print("\nlowest F1:")
        for page in sorted(pages, key=lambda p: p.f1)[: args.worst]:
            print(f"  {page.f1:.3f} P{page.precision:.2f} R{page.recall:.2f} {page.id}")
    misses = [page for page in pages if not page.title_ok]
    if misses and args.worst:
        print("\ntitle misses:")
        for page in misses[: args.worst]:
            print(f"  {page.id}: got {page.title!r}, want {page.gt_title!r}")
    text, ok = goal_line(overall, speed)
    print(f"\ngoal: {text} -> {'MET' if ok else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
