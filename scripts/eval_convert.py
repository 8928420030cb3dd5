"""Score the HTML converter on the Debian docs eval set and print a table per group.

Metrics (see shared/research/extraction.md, section 2):

- F1: bag-of-words overlap of the Markdown (syntax and link targets stripped) with
  ``gt_text``; tokens are ``[^\\W_]+`` lower-cased; averaged over pages.
- code: share of ``gt_pre`` blocks (whitespace removed, first 80 characters) found
  inside a fenced block of the output.
- whole: share of ``gt_pre`` blocks found *entire* (whitespace removed, every
  character, comments included) inside one fenced block of the output.
- heads: ATX headings written, over ``<h1>``-``<h6>`` in the oracle main HTML (capped).
- defects: share of pages with a structural defect outside code: a heading inside
  emphasis (``**#### ...**``), a tooltip glyph (``ⓘ``), raw HTML-looking text
  (``<T>``), a link turned into an image by a ``!`` before it, unbalanced fences,
  or a footnote reference without its definition.
- lang: fenced blocks with an info string holding a ``gt_pre`` block, over
  ``gt_pre_lang`` (capped per page).
- tables: pipe-table rows plus leftover ``<tr>``, over ``gt_table_rows`` (capped).
- leak: share of pages where any ``boiler`` link text shows up in the output.
- title: output title equal to ``gt_title`` once case and punctuation are ignored.
- pages/s: conversion calls only, one process, HTML already decoded.

Articles (``--articles``, readability_testpages.jsonl.gz): P/R/F1 and title of
sitelore beside trafilatura's own Markdown extraction (a peer, not ground truth).

Usage: ``python scripts/eval_convert.py [--data PATH] [--group NAME] [--worst N]
[--articles [PATH]] [--sample N]``.
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

from selectolax.lexbor import LexborHTMLParser

from sitelore.core.convert import html_to_document
from sitelore.core.sections import strip_heading_ids

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "eval" / "docs_debian.jsonl.gz"
FALLBACK_DATA = Path("/work/shared/eval/docs_debian.jsonl.gz")
ARTICLES_DATA = DEFAULT_DATA.with_name("readability_testpages.jsonl.gz")
GOALS = {
    "f1": 0.985,
    "code": 0.99,
    "whole": 0.995,
    "lang": 0.98,
    "tables": 0.98,
    "leak": 0.01,
    "title": 0.95,
    "defects": 0.0,
}
#: Goals every generator group must meet, not only the overall figure.
GROUP_GOALS = ("f1", "whole")
ARTICLE_GOALS = {"f1": 0.95, "precision": 0.93}
MIN_PAGES_PER_SECOND = 50.0
_AT_MOST = frozenset({"leak", "defects"})

_TOKEN = re.compile(r"[^\W_]+")
_FENCE_OPEN = re.compile(r"^((?:\s*>)*\s*)(`{3,}|~{3,})\s*([^`\s]*)")
_LINK_TARGET = re.compile(r"\]\((?:<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HTML_ROW = re.compile(r"<tr[\s>]", re.IGNORECASE)
#: HTML the converter writes on purpose (cell line breaks, tables holding code): markup.
_MARKUP_TAG = re.compile(r"</?(?:br|table|thead|tbody|tr|td|th)\b[^>]*>", re.IGNORECASE)
_HTML_HEADING = re.compile(r"<h[1-6][\s>]", re.IGNORECASE)
_ATX = re.compile(r"^(?:\s*>)*\s{0,3}#{1,6}\s")
_INLINE_CODE = re.compile(r"(`+).*?\1")
_DEFECTS = {
    "bold-heading": re.compile(r"^\s*(?:[-*]\s+)?\*\*#{1,6}\s", re.MULTILINE),
    "tooltip": re.compile("\u24d8"),
    # Written on purpose: <br> in cells, HTML tables whose cells hold code blocks.
    "raw-html": re.compile(
        r"(?<![\\`])<(?!br>|/?(?:table|tr|td|th)\b)(?:[A-Z]\w*|[a-z]\w*(?:,\s*\w+)*)>"
    ),
    "bang-image": re.compile(r"(?<![\\\w])!\[[A-Z]\w*\]\([^)]*\.html[^)]*\)"),
}
_FOOTNOTE_REF = re.compile(r"\[\^([^\]\s]+)\](?!:)")
_FOOTNOTE_DEF = re.compile(r"^\s*\[\^([^\]\s]+)\]:", re.MULTILINE)


@dataclasses.dataclass
class Page:
    group: str
    f1: float
    precision: float
    recall: float
    pre: int
    pre_found: int
    pre_whole: int
    headings: int
    headings_found: int
    defects: list[str]
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


def defects_of(markdown: str) -> list[str]:
    """Names of the structural defects found outside code in ``markdown``."""
    blocks, prose = fenced_blocks(markdown)
    found: list[str] = []
    if markdown.count("\n```") and any(code.endswith("\x00") for _, code in blocks):
        found.append("fence")
    bare = _LINK_TARGET.sub("]", _INLINE_CODE.sub("", prose))
    for name, pattern in _DEFECTS.items():
        if pattern.search(bare if name == "raw-html" else prose):
            found.append(name)
    refs = set(_FOOTNOTE_REF.findall(bare))
    if refs - set(_FOOTNOTE_DEF.findall(prose)):
        found.append("footnote")
    return found


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
        unclosed = i >= len(lines)
        i += 1
        blocks.append((info, "\n".join(body) + ("\x00" if unclosed else "")))
    return blocks, "\n".join(prose)


def plain_text(markdown: str) -> str:
    blocks, prose = fenced_blocks(markdown)
    prose = _MARKUP_TAG.sub(" ", _LINK_TARGET.sub("]", prose))
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


def without_tooltips(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Ground-truth tokens and ``<pre>`` texts without rustdoc's "Notable traits" tooltips.

    The oracle selector kept the tooltip text (``ⓘ Notable traits for ...``) that
    rustdoc shows on hover; issue 15 makes it chrome, like ``a.headerlink``, so it is
    taken out of the ground truth here rather than counted as lost.
    """
    want = tokens(record["gt_text"])
    pres: list[str] = list(record["gt_pre"])
    main_html = record.get("main_html") or ""
    if "notable-traits" not in main_html:
        return want, pres
    tips = [node.text(deep=True) for node in LexborHTMLParser(main_html).css(".notable-traits")]
    remaining = collections.Counter(want) - collections.Counter(
        token for tip in tips for token in tokens(tip)
    )
    want = list(remaining.elements())
    squashed = [squash(tip) for tip in tips]
    for tip in squashed:
        pres = [squash(pre).replace(tip, "") for pre in pres]
    return want, pres


def score(record: dict[str, Any]) -> Page:
    start = time.perf_counter()
    document = html_to_document(record["html"], record["url"])
    seconds = time.perf_counter() - start
    # A heading's " {#id}" is its anchor for search, markup like a link target: not text.
    markdown = strip_heading_ids(document.markdown)
    want, gt_pre = without_tooltips(record)
    f1, precision, recall = bag_f1(tokens(plain_text(markdown)), want)
    blocks = [(info, squash(code)) for info, code in fenced_blocks(markdown)[0]]
    pre_found = lang_found = pre_whole = 0
    for pre in gt_pre:
        whole = squash(pre)
        key = whole[:80]
        hits = [info for info, code in blocks if key in code]
        if hits:
            pre_found += 1
            if any(hits):
                lang_found += 1
        if any(whole in code for _, code in blocks):
            pre_whole += 1
    headings = len(_HTML_HEADING.findall(record.get("main_html") or ""))
    prose_lines = fenced_blocks(markdown)[1].split("\n")
    headings_found = sum(1 for line in prose_lines if _ATX.match(line))
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
        pre_whole=pre_whole,
        headings=headings,
        headings_found=min(headings_found, headings),
        defects=defects_of(markdown),
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
        "whole": ratio(sum(p.pre_whole for p in pages), sum(p.pre for p in pages)),
        "heads": ratio(sum(p.headings_found for p in pages), sum(p.headings for p in pages)),
        "defects": sum(bool(page.defects) for page in pages) / len(pages),
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
        f"{pct(stats['code'])} | {pct(stats['whole'])} | {pct(stats['lang'])} | "
        f"{pct(stats['tables'])} | {pct(stats['heads'])} | {pct(stats['defects'])} | "
        f"{pct(stats['leak'])} | {pct(stats['title'])} | "
        f"{'-' if speed is None else f'{speed:.0f}'} |"
    )


def load(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def _check(key: str, value: float | None, goal: float, label: str = "") -> tuple[str, bool]:
    at_most = key in _AT_MOST
    # A set without such material (no code, no tables) has nothing to miss.
    ok = value is None or (value <= goal if at_most else value >= goal)
    shown = f"{value:.3f}" if key in ("f1", "precision") and value is not None else pct(value)
    return f"{label}{key} {shown} ({'<=' if at_most else '>='} {goal})", ok


def goal_line(
    stats: dict[str, float | None], speed: float, groups: dict[str, dict[str, float | None]]
) -> tuple[str, bool]:
    checks = [_check(key, stats[key], goal) for key, goal in GOALS.items()]
    for group, group_stats in sorted(groups.items()):
        for key in GROUP_GOALS:
            label, ok = _check(key, group_stats[key], GOALS[key], f"{group} ")
            if not ok:
                checks.append((label, ok))
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
    parser.add_argument(
        "--articles",
        nargs="?",
        type=Path,
        const=ARTICLES_DATA,
        help="also score article pages beside trafilatura (default set: readerview)",
    )
    parser.add_argument("--sample", type=int, default=0, help="score every Nth page only")
    args = parser.parse_args()
    data: Path = args.data
    if not data.exists() and data == DEFAULT_DATA and FALLBACK_DATA.exists():
        data = FALLBACK_DATA
    if not data.exists():
        print(f"eval data not found: {data}", file=sys.stderr)
        return 2
    records = [r for r in load(data) if args.group in (None, r["group"])]
    if args.sample > 1:
        records = records[:: args.sample]
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
    print(
        "| group | pages | F1 (P/R) | code | whole | lang | tables | heads | defects | leak "
        "| title | pages/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    groups = {group: summarize(by_group[group]) for group in sorted(by_group)}
    for group, stats in groups.items():
        print(row(group, stats))
    overall = summarize(pages)
    print(row("**overall**", overall))
    print(f"\nsingle-core speed: {speed:.1f} pages/s over {len(records)} pages")
    if args.worst:
        print("\nlowest F1:")
        for page in sorted(pages, key=lambda p: p.f1)[: args.worst]:
            print(f"  {page.f1:.3f} P{page.precision:.2f} R{page.recall:.2f} {page.id}")
    flawed = [page for page in pages if page.defects]
    if flawed and args.worst:
        print("\nstructural defects:")
        for page in flawed[: args.worst]:
            print(f"  {page.id}: {', '.join(page.defects)}")
    misses = [page for page in pages if not page.title_ok]
    if misses and args.worst:
        print("\ntitle misses:")
        for page in misses[: args.worst]:
            print(f"  {page.id}: got {page.title!r}, want {page.gt_title!r}")
    text, ok = goal_line(overall, speed, groups)
    print(f"\ngoal: {text} -> {'MET' if ok else 'NOT MET'}")
    if args.articles is not None:
        score_articles(args.articles, args.sample)
    return 0


def _article_row(name: str, scores: list[tuple[float, float, float, bool]]) -> str:
    n = len(scores)
    f1, p, r = (sum(s[i] for s in scores) / n for i in range(3))
    title = sum(s[3] for s in scores) / n
    return f"| {name} | {n} | {f1:.3f} | {p:.3f} | {r:.3f} | {pct(title)} |"


def score_articles(path: Path, sample: int) -> None:
    """Score sitelore beside trafilatura on article pages (no docs container)."""
    import trafilatura

    records = list(load(path))
    if sample > 1:
        records = records[::sample]
    ours: list[tuple[float, float, float, bool]] = []
    peer: list[tuple[float, float, float, bool]] = []
    for record in records:
        want = tokens(record["gt_text"])
        document = html_to_document(record["html"], record["url"])
        title_ok = tokens(document.title) == tokens(record["gt_title"])
        ours.append((*bag_f1(tokens(plain_text(document.markdown)), want), title_ok))
        text = (
            trafilatura.extract(record["html"], output_format="markdown", include_links=True) or ""
        )
        title = getattr(trafilatura.extract_metadata(record["html"]), "title", None) or ""
        peer.append(
            (*bag_f1(tokens(plain_text(text)), want), tokens(title) == tokens(record["gt_title"]))
        )
    print(f"\narticles: {path} ({len(records)} pages)")
    print("| extractor | pages | F1 | precision | recall | title |")
    print("|---|---|---|---|---|---|")
    print(_article_row("sitelore", ours))
    print(_article_row("trafilatura (peer)", peer))
    n = len(ours)
    stats: dict[str, float | None] = {
        "f1": sum(s[0] for s in ours) / n,
        "precision": sum(s[1] for s in ours) / n,
    }
    checks = [_check(key, stats[key], goal) for key, goal in ARTICLE_GOALS.items()]
    text = "; ".join(f"{label} {'ok' if ok else 'MISS'}" for label, ok in checks)
    print(f"articles goal: {text} -> {'MET' if all(ok for _, ok in checks) else 'NOT MET'}")


if __name__ == "__main__":
    sys.exit(main())
