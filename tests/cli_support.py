"""Running ``sitelore`` inside a test: the exit code and captured output, an empty store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sitelore.adapters.store import SQLiteStore
from sitelore.cli.main import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``sitelore ARGS`` in this process; return its exit code, stdout and stderr.

    An exit that is not an int (never a code the CLI pins) comes back as -1, so no
    assertion on a code can pass by accident.
    """
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else -1), out, err


def create_store(path: Path) -> Path:
    """An empty sitelore store at ``path`` (the read-only commands never create one).

    Call it outside an event loop (it runs its own), as the CLI does.
    """

    async def go() -> None:
        store = SQLiteStore(path)
        await store.count()
        await store.close()

    asyncio.run(go())
    return path
