"""Identifier queries for ``make eval-search``: API names typed by someone who knows them.

Issue 16 accepts ranking changes only if keyword queries, identifiers among them, rank
no worse than before. The questions and exact titles of ``eval_search.py`` do not say
that, so this module derives identifier queries from the corpus itself, each with the
page(s) that define it, and scores a search over them (hit@1, hit@5, MRR@10).

The identifiers come from what each generator marks as a definition, never from a
hand-made list:

- Sphinx (Python): every ``<dl class="py ...">`` term's id (``os.path.join``,
  ``str.splitlines``, ``asyncio.Queue``);
- DocBook (PostgreSQL): reference page names (``CREATE INDEX``, ``pg_dump``,
  ``SPI_execute``), the terms of the settings and libpq lists (``work_mem``,
  ``PQexec``) and the functions of the function tables (``jsonb_set``);
- rustdoc (Rust ``std``): items (``HashMap``, ``fs::read_to_string``, ``vec!``) and
  the methods and constants of a type or trait (``Vec::with_capacity``,
  ``Iterator::map``, ``i32::MAX``).

A fixed number of them is drawn per generator with a seeded random sample of the sorted
set; a query's answers are every page that defines that name. Nothing here imports
sitelore: a search is passed in as a function, so the same queries score any version
of the store (``eval_search.py`` passes its own; an older checkout can pass its own).
"""

from __future__ import annotations

import collections
import dataclasses
import random
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from selectolax.lexbor import LexborHTMLParser, LexborNode

PER_GENERATOR = 100
SEED = 16

_SUFFIX = re.compile(r"-\d+$")  # rustdoc's second impl block of a name: method.new-1
_RUST_KINDS = {
    "Struct": "type",
    "Enum": "type",
    "Trait": "type",
    "Union": "type",
    "Type Definition": "type",
    "Primitive Type": "type",
    "Function": "fn",
    "Macro": "macro",
    "Constant": "const",
    "Static": "const",
}


class SiteLike(Protocol):
    """What a site of ``eval_search.SITES`` offers (read only)."""

    @property
    def name(self) -> str: ...

    def files(self) -> Iterator[tuple[Path, str]]: ...


@dataclasses.dataclass(frozen=True)
class IdentifierQuery:
    generator: str
    text: str
    answers: frozenset[str]


def _text(node: LexborNode) -> str:
    return " ".join(node.text(deep=True).split())


def _first_element(node: LexborNode) -> LexborNode | None:
    """A node's first child element, index-term anchors (empty ``a``) skipped."""
    for child in node.iter():
        if not (child.tag == "a" and not child.text().strip()):
            return child
    return None


def sphinx_identifiers(html: str) -> list[str]:
    """The Python objects a Sphinx page defines: its ``dl.py`` terms' ids."""
    tree = LexborHTMLParser(html)
    found = (node.attributes.get("id") or "" for node in tree.css("dl.py > dt[id]"))
    return list(dict.fromkeys(name for name in found if name))


def docbook_identifiers(html: str) -> list[str]:
    """Names a DocBook page defines: its reference name, listed settings, table functions."""
    tree = LexborHTMLParser(html)
    names = []
    title = tree.css_first("div.refnamediv h2 .refentrytitle")
    if title is not None:
        names.append(_text(title))
    for term in tree.css("dt[id] > span.term"):
        first = _first_element(term)
        if first is not None and first.css_matches("code.varname, code.function"):
            names.append(_text(first))
    for signature in tree.css("p.func_signature"):
        first = _first_element(signature)
        if first is not None and first.css_matches("code.function"):
            names.append(_text(first))
    return list(dict.fromkeys(name for name in names if name))


@dataclasses.dataclass(frozen=True)
class RustItem:
    """A rustdoc page's item: its kind (``_RUST_KINDS`` value), path and member names."""

    kind: str
    path: str
    members: tuple[str, ...]


def rustdoc_item(html: str) -> RustItem | None:
    """The item a rustdoc page documents and its own members (not traits' or Deref's)."""
    tree = LexborHTMLParser(html)
    heading = tree.css_first("h1.fqn .in-band")
    if heading is None:
        return None
    text = _text(heading)
    kind, path = next(
        (
            (kind, "".join(text[len(name) :].split()))
            for name, kind in _RUST_KINDS.items()
            if text.startswith(f"{name} ")
        ),
        ("", ""),
    )
    if not path:
        return None  # a module, a keyword
    selectors = (
        '#implementations-list [id^="method."]',
        '#implementations-list [id^="associatedconstant."]',
        'div.methods [id^="tymethod."]',
        'div.methods [id^="method."]',
    )
    members = []
    for selector in selectors:
        for node in tree.css(selector):
            member = (node.attributes.get("id") or "").split(".", 1)[1]
            members.append(_SUFFIX.sub("", member))
    return RustItem(kind, path, tuple(dict.fromkeys(members)))


def rust_names(item: RustItem, ambiguous: frozenset[str]) -> list[str]:
    """The queries for a rustdoc item: the item as written in code, then ``Owner::member``.

    A type is named bare (``HashMap``) unless another path ends with the same name
    (``hash_map::Entry``); a function or constant with its module (``fs::write``); a
    macro with its bang (``vec!``).
    """
    parts = item.path.split("::")
    name = parts[-1]
    qualified = "::".join(parts[-2:])
    if item.kind == "macro":
        own = f"{name}!"
    elif item.kind == "type" and name not in ambiguous:
        own = name
    else:
        own = qualified
    return [own, *(f"{name}::{member}" for member in item.members)]


def _sample(defined: dict[str, set[str]], generator: str, count: int) -> list[IdentifierQuery]:
    names = sorted(defined)
    chosen = random.Random(f"{SEED}:{generator}").sample(names, min(count, len(names)))
    return [IdentifierQuery(generator, name, frozenset(defined[name])) for name in chosen]


def identifier_queries(
    sites: Iterable[SiteLike], per_generator: int = PER_GENERATOR
) -> list[IdentifierQuery]:
    """The seeded sample of identifiers of every generator the sites hold, with answers."""
    defined: dict[str, dict[str, set[str]]] = collections.defaultdict(
        lambda: collections.defaultdict(set)
    )
    rust: list[tuple[RustItem, str]] = []
    for site in sites:
        for path, url in site.files():
            html = path.read_text(encoding="utf-8", errors="replace")
            if site.name == "python":
                for name in sphinx_identifiers(html):
                    defined["sphinx"][name].add(url)
            elif site.name == "postgres":
                for name in docbook_identifiers(html):
                    defined["docbook"][name].add(url)
            elif site.name == "rust" and (item := rustdoc_item(html)) is not None:
                rust.append((item, url))
    paths: dict[str, set[str]] = collections.defaultdict(set)
    for item, _ in rust:
        paths[item.path.rsplit("::", 1)[-1]].add(item.path)
    ambiguous = frozenset(name for name, found in paths.items() if len(found) > 1)
    for item, url in rust:
        for name in rust_names(item, ambiguous):
            defined["rustdoc"][name].add(url)
    queries = []
    for generator in sorted(defined):
        queries.extend(_sample(defined[generator], generator, per_generator))
    return queries


def _page(url: str) -> str:
    return url.split("#", 1)[0]


def same_content(db: Path) -> dict[str, set[str]]:
    """Each stored URL -> the URLs stored with the same content (one of them is shown)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT url, content_hash FROM documents").fetchall()
    by_hash: dict[str, set[str]] = collections.defaultdict(set)
    for url, digest in rows:
        by_hash[digest].add(url)
    return {url: by_hash[digest] for url, digest in rows}


async def score_identifiers(
    queries: Sequence[IdentifierQuery],
    search: Callable[[str], Awaitable[Sequence[str]]],
    same: dict[str, set[str]],
    *,
    name: str,
    misses: int = 0,
) -> dict[str, float]:
    """hit@1, hit@5 and MRR@10 per generator and in all (printed); ``search`` gives URLs.

    ``misses`` queries not answered at 5 are printed with what ranked above.
    """
    ranks: dict[str, list[int | None]] = collections.defaultdict(list)
    shown = 0
    for query in queries:
        wanted = set(query.answers)
        for url in query.answers:
            wanted |= same.get(url, set())
        urls = [_page(url) for url in await search(query.text)]
        rank = next((i for i, url in enumerate(urls, 1) if url in wanted), None)
        ranks[query.generator].append(rank)
        ranks["all"].append(rank)
        if shown < misses and (rank is None or rank > 5):
            shown += 1
            top = ", ".join(url.split("/", 3)[-1] for url in urls[:5])
            answer = sorted(query.answers)[0].split("/", 3)[-1]
            print(f"  miss [{query.generator}] {query.text!r} ({answer}): rank {rank}; top: {top}")
    return print_ranks(name, "queries", ranks, width=21)


def print_ranks(
    name: str, counted: str, ranks: dict[str, list[int | None]], *, width: int
) -> dict[str, float]:
    """Print hit@1, hit@5 and MRR@10 per group of ranks (None: not in the top 10).

    Returns the ``all`` group's figures.
    """
    print(f"{name:{width}} {counted:>{len(counted)}} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7}")
    result: dict[str, float] = {}
    for group, found in ranks.items():
        n = len(found)
        hit1 = sum(1 for r in found if r is not None and r <= 1) / n
        hit5 = sum(1 for r in found if r is not None and r <= 5) / n
        mrr = sum(1 / r for r in found if r is not None) / n
        print(f"{group:{width}} {n:>{len(counted)}} {hit1:>6.2f} {hit5:>6.2f} {mrr:>7.3f}")
        if group == "all":
            result = {"hit@1": hit1, "hit@5": hit5, "mrr@10": mrr}
    return result
