"""The public facade: ``sitelore.__all__`` is the library's promise, pinned here."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sitelore

# One string, split: the pin is written apart from the facade it checks.
PUBLIC = """
ChangeKind ChangeReport ConfigError CrawlOptions CrawlSummary
Document DocumentConverter Limits PageError PageOutcome
Runtime Settings SiteloreError SkipReason SourceSpec
UsageError __version__ is_allowed normalize_url open_store
parse_robots_txt
""".split()  # noqa: SIM905


def test_all_is_pinned() -> None:
    """Adding or removing a public name is a deliberate change of this list."""
    assert sorted(sitelore.__all__) == sorted(PUBLIC)
    assert set(sitelore._EXPORTS) == set(PUBLIC) - {"__version__"}


def test_every_public_name_resolves_to_a_real_object() -> None:
    for name in PUBLIC:
        value = getattr(sitelore, name)
        assert value is not None, name
        if name != "__version__":
            assert getattr(value, "__name__", name) == name, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="not_a_thing"):
        getattr(sitelore, "not_a_thing")  # noqa: B009 - the name is looked up at run time


def test_importing_sitelore_loads_no_engine_or_network_stack() -> None:
    """``import sitelore`` stays cheap: the names are imported on first use."""
    code = (
        "import sys, sitelore; "
        "print(','.join(m for m in ('aiohttp', 'pydantic', 'sitelore.app.bootstrap', "
        "'sitelore.crawl', 'selectolax') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
