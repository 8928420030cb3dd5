"""Shared plumbing of the bench scripts: crawl results, child processes, server stats, tables.

A crawler runs in a child process (``run_child``) and prints one JSON line starting
with ``RESULT`` (``emit_result``); the parent adds what only it can measure cleanly:
the child's whole CPU time and peak RSS from ``os.wait4``.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ChildRun",
    "CrawlClock",
    "ServerStats",
    "emit_result",
    "format_table",
    "read_server_stats",
    "run_child",
]

BENCH_DIR = Path(__file__).resolve().parent
RESULT_PREFIX = "RESULT "


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CrawlClock:
    """Wall and CPU time of the crawl phase of a child (imports and start-up excluded).

    CPU counts this process and its reaped children (sitelore's conversion workers,
    reaped when its crawl ends): ``elapsed`` must be read after they are reaped.
    """

    def __init__(self) -> None:
        self.wall0 = time.perf_counter()
        self.own0 = time.process_time()
        self.children0 = _children_cpu()

    def split(self) -> tuple[float, float]:
        """(CPU seconds of this process, of its reaped children) since construction."""
        return time.process_time() - self.own0, _children_cpu() - self.children0

    def elapsed(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds of this process and its reaped children) since then."""
        return time.perf_counter() - self.wall0, sum(self.split())


def emit_result(
    *,
    crawler: str,
    ok_urls: Iterable[str],
    responses: int,
    clock: CrawlClock,
    urls_out: str | None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Print the child's result line; write its distinct status-200 URLs to ``urls_out``."""
    wall, cpu = clock.elapsed()
    ok = sorted(set(ok_urls))
    if urls_out:
        Path(urls_out).write_text("\n".join(ok) + "\n", encoding="utf-8")
    result = {
        "crawler": crawler,
        "pages_200": len(ok),
        "responses": responses,
        "crawl_wall_s": wall,
        "crawl_cpu_s": cpu,
        "self_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **(extra or {}),
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)


@dataclasses.dataclass(slots=True)
class ChildRun:
    """What the parent saw of one child: its result line, CPU and peak RSS."""

    result: dict[str, Any]
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    returncode: int
    stderr_tail: str


def run_child(
    argv: Sequence[str], *, timeout: float, env: dict[str, str] | None = None
) -> ChildRun:
    """Run ``python argv...`` in a fresh process; collect its result, rusage and exit code.

    The child is reaped with ``os.wait4``, so CPU seconds and peak RSS are its own
    (``ru_maxrss`` of RUSAGE_CHILDREN would be the largest of all children so far).
    """
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdout=out,
            stderr=err,
            text=True,
            env={**os.environ, **(env or {})},
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    result: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
    return ChildRun(
        result=result,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        max_rss_mb=usage.ru_maxrss / 1024,
        returncode=proc.returncode,
        stderr_tail="\n".join(stderr.strip().splitlines()[-8:]),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ServerStats:
    """The bench server's request count and CPU seconds at one moment."""

    requests: int
    cpu_s: float
    by_status: dict[str, int]


def read_server_stats(port: int) -> ServerStats:
    """Ask the bench server for its counters (``GET /__stats``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/__stats", headers={"Connection": "close"})
        data = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return ServerStats(int(data["requests"]), float(data["cpu_s"]), dict(data["by_status"]))


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table (pipes), columns padded for reading in a terminal."""
    text_rows = [[str(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(list(headers)), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(row) for row in text_rows)
    return "\n".join(out)
