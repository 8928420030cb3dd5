"""The identifier extraction of ``make eval-search`` (scripts/eval_identifiers.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "scripts" / "eval_identifiers.py"
    spec = importlib.util.spec_from_file_location("eval_identifiers", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("eval_identifiers", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


ids = _load()

_SPHINX = """
<dl class="py function"><dt class="sig sig-object py" id="os.path.join">
<span class="sig-name descname">join</span></dt><dd>Join.</dd></dl>
<dl class="py method"><dt class="sig sig-object py" id="str.splitlines">splitlines</dt></dl>
<dl class="py method"><dt class="sig sig-object py">noindex</dt></dl>
<dl class="simple"><dt id="term-x">not an object</dt></dl>
<dl class="c function"><dt class="sig sig-object c" id="c.PyList_New">PyList_New</dt></dl>
"""

_DOCBOOK_REF = """
<div class="refnamediv"><h2><span class="refentrytitle"><span class="application">pg_dump
</span></span></h2><p>pg_dump — extract a database</p></div>
<p>See <span class="refentrytitle">pg_restore</span></p>
"""

_DOCBOOK_TERMS = """
<dl><dt id="GUC-WORK-MEM"><span class="term"><code class="varname">work_mem</code>
(<code class="type">integer</code>)</span></dt>
<dt id="LIBPQ-PQEXEC"><span class="term"><code class="function">PQexec</code>
<a id="id-1" class="indexterm"></a></span></dt>
<dt id="LIBPQ-HOST"><span class="term"><code class="literal">host</code></span></dt>
<dt><span class="term"><code class="varname">no_id</code></span></dt></dl>
<table><tr><td class="func_table_entry"><p class="func_signature">
<a id="id-2" class="indexterm"></a>
<code class="function">row_number</code> () → <code class="returnvalue">bigint</code></p>
<p class="func_signature"><code class="type">jsonb</code> <code class="literal">-&gt;</code>
<code class="function">not_first</code></p></td></tr></table>
"""

_RUST_STRUCT = """
<h1 class="fqn"><span class="in-band">Struct <a>std</a>::<wbr><a>vec</a>::<wbr>
<a class="struct">Vec</a><button id="copy-path"><img alt="Copy item path"></button></span></h1>
<div id="implementations-list">
<section id="method.new" class="method"></section>
<section id="method.new-1" class="method"></section>
<section id="associatedconstant.MAX"></section>
<div id="examples"></div></div>
<h2 id="deref-methods-%5BT%5D">Methods from Deref</h2>
<div id="deref-methods-%5BT%5D-1"><section id="method.sort"></section></div>
<div id="trait-implementations-list"><section id="method.clone"></section></div>
"""

_RUST_TRAIT = """
<h1 class="fqn"><span class="in-band">Trait <a>std</a>::<a>io</a>::<a>Read</a></span></h1>
<h2 id="required-methods">Required Methods</h2>
<div class="methods"><div id="tymethod.read"></div><div id="errors"></div>
<div id="method.read_to_string"></div></div>
"""


@pytest.mark.parametrize(
    ("extract", "html", "expected"),
    [
        ("sphinx_identifiers", _SPHINX, ["os.path.join", "str.splitlines"]),
        ("sphinx_identifiers", "<p>No objects</p>", []),
        ("docbook_identifiers", _DOCBOOK_REF, ["pg_dump"]),
        ("docbook_identifiers", _DOCBOOK_TERMS, ["work_mem", "PQexec", "row_number"]),
        ("docbook_identifiers", "<div class='refnamediv'><h2>Name</h2></div>", []),
    ],
)
def test_page_identifiers(extract: str, html: str, expected: list[str]) -> None:
    assert getattr(ids, extract)(html) == expected


@pytest.mark.parametrize(
    ("html", "kind", "path", "members"),
    [
        (_RUST_STRUCT, "type", "std::vec::Vec", ("new", "MAX")),
        (_RUST_TRAIT, "type", "std::io::Read", ("read", "read_to_string")),
        (
            "<h1 class='fqn'><span class='in-band'>Function <a>std</a>::<a>fs</a>::"
            "<a>write</a></span></h1>",
            "fn",
            "std::fs::write",
            (),
        ),
        (
            "<h1 class='fqn'><span class='in-band'>Primitive Type <a>str</a></span></h1>",
            "type",
            "str",
            (),
        ),
    ],
)
def test_rustdoc_item(html: str, kind: str, path: str, members: tuple[str, ...]) -> None:
    assert ids.rustdoc_item(html) == ids.RustItem(kind, path, members)


@pytest.mark.parametrize(
    "html",
    [
        "<h1 class='fqn'><span class='in-band'>Keyword <a>fn</a></span></h1>",
        "<h1 class='fqn'><span class='in-band'>Module <a>std</a>::<a>vec</a></span></h1>",
        "<h1>Chapter 8: Vectors</h1>",  # an mdBook page
    ],
)
def test_rustdoc_pages_without_an_item(html: str) -> None:
    assert ids.rustdoc_item(html) is None


@pytest.mark.parametrize(
    ("kind", "path", "members", "ambiguous", "expected"),
    [
        ("type", "std::vec::Vec", ("new",), set(), ["Vec", "Vec::new"]),
        ("type", "std::collections::hash_map::Entry", (), {"Entry"}, ["hash_map::Entry"]),
        ("fn", "std::fs::read_to_string", (), set(), ["fs::read_to_string"]),
        ("macro", "std::vec", (), {"vec"}, ["vec!"]),
        ("const", "std::path::MAIN_SEPARATOR", (), set(), ["path::MAIN_SEPARATOR"]),
        ("type", "i32", ("MAX",), set(), ["i32", "i32::MAX"]),
    ],
)
def test_rust_names(
    kind: str, path: str, members: tuple[str, ...], ambiguous: set[str], expected: list[str]
) -> None:
    item = ids.RustItem(kind, path, members)
    assert ids.rust_names(item, frozenset(ambiguous)) == expected
