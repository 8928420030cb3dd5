"""``make bench``: sitelore's crawl and component figures beside well-known peers, same run.

Prints figures, never pass/fail. Every crawler runs in its own process against the same
loopback site (``docsite.py``), with the same robots.txt, depth limit and concurrency;
each must fetch the same N pages with status 200, and the URL sets are compared.

    python bench/run.py                 # ~1k-page side-by-side runs + components (< 15 min)
    python bench/run.py --full          # adds 10k-page runs (Scrapy included) and 100k
    python bench/run.py --profile prof.txt   # also profile one sitelore crawl (pyinstrument)

CPU ms per page (the crawler's own user+sys CPU over the crawl phase, start-up excluded,
plus its child processes: sitelore's conversion workers, start-up included) is the
robust figure on a shared machine. The peers are CPU-bound in one process, so on a quiet
core their pages/s = 1000 / (CPU ms per page); sitelore converts in worker processes
(one per core by default) while its event loop fetches and stores, so its wall rate can
beat that. Wall pages/s depends on what else the machine is doing: the "other load"
column says how many cores other processes used during each run. ``sitelore-1w`` is
sitelore with one conversion worker, ``sitelore-1core`` sitelore held to one core
(``sched_setaffinity``, so one worker too): the scaling rows compare them with the
default.
"Quiet cores (est.)" is what each run's CPU per page allows on cores nobody else uses
(a one-process peer: 1000 / CPU ms per page; sitelore: bounded by its event loop, its
workers and the cores they share), for when the neighbours make wall rates noise.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from benchlib import BENCH_DIR, ChildRun, format_table, read_server_stats, run_child
from docsite import depth_for, page_path

from sitelore.adapters.convert_pool import default_workers

__all__ = ["main"]

_TICK = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(slots=True)
class Row:
    """One crawl run as the tables show it."""

    pages: int
    crawler: str
    concurrency: int
    child: ChildRun
    requests: int
    server_cpu_s: float
    other_cores: float
    same_set: bool
    #: "min-max of k runs" of CPU ms/page when this row is the median of repeated runs.
    spread: str = ""

    @property
    def ok(self) -> int:
        return int(self.child.result.get("pages_200", 0))

    @property
    def crawl_wall(self) -> float:
        return float(self.child.result.get("crawl_wall_s", self.child.wall_s))

    @property
    def crawl_cpu(self) -> float:
        return float(self.child.result.get("crawl_cpu_s", self.child.cpu_s))

    @property
    def pages_per_s(self) -> float:
        return self.ok / self.crawl_wall if self.crawl_wall else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.crawl_cpu / self.ok if self.ok else float("nan")


def _busy_seconds() -> float:
    """Machine-wide busy CPU seconds so far (all cores), from /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _TICK


@contextmanager
def serve_site(pages: int) -> Iterator[int]:
    """Run ``docsite.py`` for ``pages`` pages in its own process; yield its port."""
    proc = subprocess.Popen(
        [sys.executable, str(BENCH_DIR / "docsite.py"), "--pages", str(pages), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the bench site did not start: {line!r}")
        yield int(line.split()[1])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


_CRAWLERS: dict[str, list[str]] = {
    "sitelore": ["crawl_sitelore.py"],
    "sitelore-1w": ["crawl_sitelore.py", "--workers", "1"],
    "sitelore-1core": ["crawl_sitelore.py", "--cores", "1"],
    "aio+store": ["crawl_aio.py", "--store"],
    "aio": ["crawl_aio.py"],
    "scrapy": ["crawl_scrapy.py"],
    "scrapy+markdownify": ["crawl_scrapy.py", "--markdownify"],
}


def crawl(
    name: str, port: int, pages: int, concurrency: int, *, timeout: float, profile: str | None
) -> Row:
    """Run one crawler in a child process against the site on ``port``; check its URL set."""
    script, *flags = _CRAWLERS[name]
    seed = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as tmp:
        urls_file = Path(tmp) / "urls.txt"
        argv = [
            str(BENCH_DIR / script),
            seed,
            *flags,
            "--pages",
            str(pages),
            "--depth",
            "6",
            "--concurrency",
            str(concurrency),
            "--urls-out",
            str(urls_file),
        ]
        if profile and name == "sitelore":
            argv += ["--profile", profile]
        before, busy0 = read_server_stats(port), _busy_seconds()
        child = run_child(argv, timeout=timeout)
        after, busy1 = read_server_stats(port), _busy_seconds()
        if child.returncode != 0 or not child.result:
            print(
                f"  ! {name} c{concurrency} failed (exit {child.returncode}):\n{child.stderr_tail}"
            )
        got = set(urls_file.read_text().split()) if urls_file.exists() else set()
    expected = {seed.rstrip("/") + page_path(i) for i in range(pages)}
    server_cpu = after.cpu_s - before.cpu_s
    other = max(0.0, (busy1 - busy0) - child.cpu_s - server_cpu) / max(child.wall_s, 1e-9)
    row = Row(
        pages=pages,
        crawler=name,
        concurrency=concurrency,
        child=child,
        requests=after.requests - before.requests - 1,  # minus the /__stats request
        server_cpu_s=server_cpu,
        other_cores=other,
        same_set=got == expected,
    )
    print(
        f"  {name:<19} c{concurrency:<3} {row.ok:>6} pages  {row.pages_per_s:7.1f} pages/s  "
        f"{row.cpu_ms_per_page:6.2f} CPU ms/page  {child.max_rss_mb:6.1f} MB"
        + ("" if row.same_set else "  URL SET DIFFERS"),
        flush=True,
    )
    return row


def crawl_table(rows: Sequence[Row]) -> str:
    """The side-by-side table of crawl runs."""
    return format_table(
        [
            "site",
            "crawler",
            "conc.",
            "pages 200",
            "same URLs",
            "requests",
            "wall s",
            "pages/s (wall)",
            "crawl CPU s",
            "CPU ms/page",
            "spread",
            "process CPU s",
            "peak RSS MB",
            "server CPU ms/req",
            "other load (cores)",
        ],
        [
            (
                f"{r.pages // 1000}k" if r.pages % 1000 == 0 else r.pages,
                r.crawler,
                r.concurrency,
                r.ok,
                "yes" if r.same_set else "NO",
                r.requests,
                f"{r.crawl_wall:.1f}",
                f"{r.pages_per_s:.1f}",
                f"{r.crawl_cpu:.1f}",
                f"{r.cpu_ms_per_page:.2f}",
                r.spread or "1 run",
                f"{r.child.cpu_s:.1f}",
                f"{r.child.max_rss_mb:.0f}",
                f"{1000 * r.server_cpu_s / max(r.requests, 1):.3f}",
                f"{r.other_cores:.2f}",
            )
            for r in rows
        ],
    )


def _workers(row: Row) -> int:
    return 1 if row.crawler in ("sitelore-1w", "sitelore-1core") else default_workers()


def _cpu_split(row: Row) -> tuple[float, float]:
    """sitelore's (event loop, conversion workers) CPU ms per page."""
    result = row.child.result
    loop = 1000 * float(result.get("loop_cpu_s", 0.0)) / row.ok
    return loop, 1000 * float(result.get("workers_cpu_s", 0.0)) / row.ok


def quiet_rate(row: Row) -> float:
    """Pages/s this run's CPU per page allows on cores nobody else uses.

    A one-process crawler: 1000 / CPU ms per page. sitelore: its loop, its workers
    (each one page at a time) and the machine's cores are the three bounds.
    """
    if not row.ok:
        return 0.0
    if not row.crawler.startswith("sitelore"):
        return 1000 / row.cpu_ms_per_page
    loop, conv = _cpu_split(row)
    workers = _workers(row)
    cores = 1 if row.crawler == "sitelore-1core" else min(os.cpu_count() or 1, workers + 1)
    bound = max(loop, conv / workers, (loop + conv) / cores)
    return 1000 / bound if bound else 0.0


def split_table(rows: Sequence[Row]) -> str:
    """Where sitelore's CPU goes: its event loop vs its conversion workers.

    On a shared machine wall rates say more about the neighbours than about the
    crawler; the split gives what quiet cores would allow: one origin's requests are
    sequential on the loop, pages convert on ``workers`` processes, and all of it
    shares the machine's cores.
    """
    out = []
    for r in rows:
        if not r.crawler.startswith("sitelore") or not r.ok:
            continue
        loop, conv = _cpu_split(r)
        out.append(
            (
                f"{r.pages // 1000}k" if r.pages % 1000 == 0 else r.pages,
                r.crawler,
                r.concurrency,
                _workers(r),
                f"{loop:.2f}",
                f"{conv:.2f}",
                f"{quiet_rate(r):.0f}",
                f"{r.pages_per_s:.1f}",
            )
        )
    return format_table(
        [
            "site",
            "crawler",
            "conc.",
            "workers",
            "loop CPU ms/page",
            "workers CPU ms/page",
            "pages/s quiet cores (est.)",
            "pages/s (wall, this run)",
        ],
        out,
    )


def ratio_table(rows: Sequence[Row]) -> str:
    """sitelore against each peer at each concurrency: wall and CPU ratios."""
    targets = {"scrapy+markdownify": ">= 8x", "scrapy": ">= 3x", "aio+store": ">= 0.75x"}
    out = []
    for pages, conc in dict.fromkeys((r.pages, r.concurrency) for r in rows):
        group = {r.crawler: r for r in rows if (r.pages, r.concurrency) == (pages, conc)}
        mine = group.get("sitelore")
        if mine is None:
            continue
        for name, label, target in (
            ("sitelore-1w", "1 worker", ">= 1.4x (2 workers)"),
            ("sitelore-1core", "1 core", "-"),
        ):
            one = group.get(name)
            if one is None or not one.ok or not mine.ok:
                continue
            out.append(
                (
                    f"{pages // 1000}k" if pages % 1000 == 0 else pages,
                    conc,
                    f"sitelore ({default_workers()} workers) / sitelore ({label})",
                    f"{mine.pages_per_s / one.pages_per_s:.2f}x",
                    f"{one.cpu_ms_per_page / mine.cpu_ms_per_page:.2f}x",
                    f"{quiet_rate(mine) / quiet_rate(one):.2f}x",
                    target,
                )
            )
        for peer, target in targets.items():
            other = group.get(peer)
            if other is None or not other.ok or not mine.ok:
                continue
            out.append(
                (
                    f"{pages // 1000}k" if pages % 1000 == 0 else pages,
                    conc,
                    f"sitelore / {peer}",
                    f"{mine.pages_per_s / other.pages_per_s:.2f}x",
                    f"{other.cpu_ms_per_page / mine.cpu_ms_per_page:.2f}x",
                    f"{quiet_rate(mine) / quiet_rate(other):.2f}x",
                    target,
                )
            )
    return format_table(
        [
            "site",
            "conc.",
            "ratio",
            "pages/s (wall)",
            "per CPU-s (robust)",
            "pages/s on quiet cores (est.)",
            "target (wall)",
        ],
        out,
    )


async def _load(port: int, pages: int, connections: int, requests: int) -> tuple[float, int]:
    """Keep-alive GETs of random pages over ``connections`` sockets; (seconds, bytes)."""
    rng = random.Random(7)
    paths = [page_path(rng.randrange(pages)) for _ in range(requests)]
    received = 0

    async def client(chunk: list[str]) -> None:
        nonlocal received
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for path in chunk:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            received += len(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(client(paths[k::connections]) for k in range(connections)))
    return time.perf_counter() - started, received


def server_alone(port: int, pages: int) -> str:
    """How fast the bench server answers alone, and its CPU per request."""
    requests = 4000
    before = read_server_stats(port)
    seconds, received = asyncio.run(_load(port, pages, 16, requests))
    after = read_server_stats(port)
    cpu = after.cpu_s - before.cpu_s
    return format_table(
        ["load", "requests", "requests/s", "MB/s", "server CPU ms/request", "max pages/s (1 core)"],
        [
            (
                "16 keep-alive connections, random pages",
                requests,
                f"{requests / seconds:,.0f}",
                f"{received / seconds / 1e6:.0f}",
                f"{1000 * cpu / requests:.3f}",
                f"{requests / cpu:,.0f}" if cpu else "-",
            )
        ],
    )


def _versions() -> str:
    names = ["sitelore", "aiohttp", "selectolax", "html-to-markdown", "scrapy", "markdownify"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (missing)")
    return ", ".join(found)


def _side_by_side(
    pages: int, concurrencies: Sequence[int], crawlers: Sequence[str], profile: str | None
) -> list[Row]:
    rows: list[Row] = []
    with serve_site(pages) as port:
        print(f"\n## Server alone ({pages} pages, no crawler running)\n")
        print(server_alone(port, pages))
        print(f"\n## Crawls of the {pages}-page site (depth <= {depth_for(pages)})\n")
        for concurrency in concurrencies:
            runs: dict[str, list[Row]] = {name: [] for name in crawlers}
            for round_ in range(max(_REPEATS.get(name, 1) for name in crawlers)):
                for name in crawlers:  # interleaved, so drift hits every crawler alike
                    if round_ < _REPEATS.get(name, 1):
                        runs[name].append(
                            crawl(name, port, pages, concurrency, timeout=1800, profile=None)
                        )
            rows.extend(_median(found) for found in runs.values())
        if profile:
            # An extra run, left out of the tables: the profiler slows it down.
            crawl("sitelore", port, pages, concurrencies[0], timeout=1800, profile=profile)
            print(f"  (that run was profiled: see {profile}; not in the tables)")
    return rows


#: Runs per crawler in the side-by-side tables (the median is shown): the cheap runs
#: are repeated to tame the noise of a shared machine; Scrapy + markdownify takes ~1 min.
_REPEATS = {
    "sitelore": 3,
    "sitelore-1w": 3,
    "sitelore-1core": 3,
    "aio+store": 3,
    "aio": 3,
    "scrapy": 2,
    "scrapy+markdownify": 1,
}


def _median(runs: Sequence[Row]) -> Row:
    """The run with the median CPU per page, noting the spread of all of them."""
    ordered = sorted(runs, key=lambda row: row.cpu_ms_per_page)
    middle = ordered[(len(ordered) - 1) // 2]
    if len(ordered) > 1:
        low, high = ordered[0].cpu_ms_per_page, ordered[-1].cpu_ms_per_page
        middle.spread = f"{low:.2f}-{high:.2f} ({len(ordered)} runs)"
        middle.same_set = all(row.same_set for row in ordered)
    return middle


def _run_script(args: Sequence[str]) -> None:
    print(flush=True)
    subprocess.run([sys.executable, *args], check=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench and print the tables; always returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--full", action="store_true", help="add the 10k and 100k runs")
    parser.add_argument("--pages", type=int, default=1000, help="site size for side-by-side")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--no-scrapy", action="store_true", help="leave the Scrapy runs out")
    parser.add_argument("--no-components", action="store_true")
    parser.add_argument("--profile", default=None, help="profile one sitelore crawl to a file")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print("# sitelore bench\n")
    print(
        f"- machine: {os.cpu_count()} CPUs, {platform.platform()}, Python {sys.version.split()[0]}"
    )
    print(f"- sitelore converts in {default_workers()} worker processes (the cores it may use)")
    print(f"- versions: {_versions()}")
    print("- every crawler: delay 0, robots.txt obeyed, depth <= 6, same site, own process")
    crawlers = ["sitelore", "sitelore-1w", "sitelore-1core", "aio+store", "aio"]
    if not args.no_scrapy:
        crawlers += ["scrapy", "scrapy+markdownify"]
    rows = _side_by_side(args.pages, args.concurrency, crawlers, args.profile)
    print("\n" + crawl_table(rows))
    print("\n## Ratios (same run, same site)\n")
    print(ratio_table(rows))
    print("\n## sitelore's CPU: event loop and conversion workers\n")
    print(split_table(rows))
    if not args.no_components:
        print("\n## Components (one thread, pages of the 10k site)")
        _run_script([str(BENCH_DIR / "components.py")])
        print("\n### robots.txt matching (bench/robots_bench.py)\n")
        _run_script([str(BENCH_DIR / "robots_bench.py")])
        print("\n### SQLite store (bench/store_bench.py)\n")
        _run_script([str(BENCH_DIR / "store_bench.py"), "--docs", "1000"])
        print("\n### Read command start-up (bench/startup_bench.py)\n")
        _run_script([str(BENCH_DIR / "startup_bench.py")])
    if args.full:
        print("\n## Scaling: 10k and 100k pages\n")
        scaling: list[Row] = []
        peers = ["sitelore", "aio+store"] + ([] if args.no_scrapy else ["scrapy"])
        for pages, names, concurrencies in (
            (10_000, peers, [16]),
            (10_000, ["sitelore"], [64]),
            (100_000, ["sitelore"], [16]),
        ):
            with serve_site(pages) as port:
                for concurrency in concurrencies:
                    for name in names:
                        scaling.append(
                            crawl(name, port, pages, concurrency, timeout=3600, profile=None)
                        )
        print("\n" + crawl_table(scaling))
        print("\n" + ratio_table(scaling))
    print(f"\nbench finished in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
