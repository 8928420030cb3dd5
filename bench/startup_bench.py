"""Measure how fast a read command starts: ``sitelore search WORD`` on the demo store.

    .venv/bin/python bench/startup_bench.py              # 9 runs, median wall time
    .venv/bin/python bench/startup_bench.py --runs 9 --word install

The demo store is built first (``sitelore demo`` into a temporary directory). Each run
is a fresh process, as a person typing the command gets: interpreter start, imports,
opening the store, the query and printing. CPU is the child's user+sys time. One
untimed run first writes the bytecode cache even under ``PYTHONDONTWRITEBYTECODE``
(as ``pip install`` does for an installed package), so no timed run compiles sources.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

_SITELORE = Path(sys.executable).with_name("sitelore")


def _warm(args: Sequence[str]) -> None:
    """Run once with bytecode writing on, so the timed runs load cached bytecode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(_SITELORE), *args], check=True, capture_output=True, env=env)


def _timed(args: Sequence[str]) -> tuple[float, float]:
    """Wall and CPU (user+sys) seconds of one run of ``sitelore args``."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([str(_SITELORE), *args], check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main(argv: Sequence[str] | None = None) -> int:
    """Build a demo store, time ``sitelore search`` on it, print the median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--word", default="retry")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sitelore-startup-") as tmp:
        store = str(Path(tmp) / "demo.db")
        subprocess.run([str(_SITELORE), "demo", "--db", store], check=True, capture_output=True)
        command = ["search", args.word, "--db", store]
        _warm(command)
        runs = [_timed(command) for _ in range(args.runs)]
    walls = sorted(wall for wall, _ in runs)
    cpus = sorted(cpu for _, cpu in runs)
    print("| command | runs | median wall s | min-max wall s | median CPU s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| sitelore search {args.word} (demo store) | {len(runs)} "
        f"| {statistics.median(walls):.3f} | {walls[0]:.3f}-{walls[-1]:.3f} "
        f"| {statistics.median(cpus):.3f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
