"""The examples in src's docstrings are true: each module's doctests run and pass."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sitelore

#: Every module of the package but the entry point (importing it runs the CLI).
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(sitelore.__path__, "sitelore.")
    if not info.name.endswith("__main__")
)


def test_the_package_has_examples() -> None:
    finder = doctest.DocTestFinder()
    examples = sum(
        len(test.examples)
        for name in MODULES
        for test in finder.find(importlib.import_module(name))
    )
    assert examples >= 50


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples fail in {name}"
