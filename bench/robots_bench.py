"""Measure robots.txt URL checks per second: sitelore beside Protego and urllib.robotparser.

Prints a small table; never fails on the numbers. Run ``python bench/robots_bench.py``
(Protego is optional: install the ``bench`` extra to include it).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import urllib.robotparser
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    from sitelore.core.robots import is_allowed, parse_robots_txt
except ImportError:  # run from a checkout where sitelore is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from sitelore.core.robots import is_allowed, parse_robots_txt

__all__ = ["ROBOTS_TXT", "main", "make_urls"]

USER_AGENT = "sitelore/0.1 (+https://github.com/sitelore/sitelore)"
BASE = "https://docs.example.com"

ROBOTS_TXT = """\
# robots.txt for docs.example.com
User-agent: Googlebot
Disallow: /search
Disallow: /*?q=
Allow: /search/about
Crawl-delay: 1

User-agent: Bingbot
User-agent: Slurp
Disallow: /private/
Disallow: /*.json$
Crawl-delay: 3

User-agent: GPTBot
User-agent: CCBot
Disallow: /

User-agent: *
Disallow: /admin/
Disallow: /api/internal/
Disallow: /cgi-bin/
Disallow: /tmp/
Disallow: /search
Disallow: /*?q=
Disallow: /*?query=
Disallow: /*&sort=
Disallow: /*?sessionid=
Disallow: /*;jsessionid=
Disallow: /*.pdf$
Disallow: /*.zip$
Disallow: /*.tar.gz$
Disallow: /*/print/
Disallow: /*/raw/
Disallow: /downloads/archive/
Disallow: /docs/*/_sources/
Disallow: /docs/*/_static/*.map$
Disallow: /docs/old/
Disallow: /blog/tag/
Disallow: /blog/page/*/
Disallow: /user/
Disallow: /login
Disallow: /logout
Disallow: /signup
Disallow: /cart
Disallow: /checkout/
Disallow: /*/edit$
Disallow: /*/history
Disallow: /wiki/Special:
Disallow: /wiki/*?action=
Disallow: /wiki/*?oldid=
Disallow: /preview/
Disallow: /drafts/
Disallow: /*utm_source=
Allow: /docs/old/README
Allow: /downloads/archive/index.html
Allow: /api/internal/status$
Allow: /search/about
Allow: /*.pdf?inline=1
Allow: /user/help
Allow: /wiki/Special:Search$
Allow: /docs/*/_static/logo.svg$
Crawl-delay: 0.5

Sitemap: https://docs.example.com/sitemap.xml
Sitemap: https://docs.example.com/sitemap-blog.xml
"""

_SECTIONS = ("docs", "docs/old", "api", "api/internal", "blog", "wiki", "user", "downloads")
_VERSIONS = ("v1", "v2", "latest", "stable", "3.11")
_WORDS = ("intro", "install", "config", "reference", "tutorial", "faq", "print", "raw", "edit")
_SUFFIXES = ("", "/", ".html", ".pdf", ".json", ".zip", "/edit", "/history", ".map")
_QUERIES = ("", "", "", "?q=robots", "?page=2", "?sort=asc&sort=desc", "?utm_source=x", "#top")


def make_urls(count: int, seed: int = 9309) -> list[str]:
    """``count`` realistic documentation URLs, the same for a given seed."""
    rng = random.Random(seed)
    urls = []
    for _ in range(count):
        parts = [rng.choice(_SECTIONS)]
        if rng.random() < 0.5:
            parts.append(rng.choice(_VERSIONS))
        if rng.random() < 0.2:
            parts.append(rng.choice(("_static", "_sources", "print", "raw")))
        parts.extend(rng.choice(_WORDS) for _ in range(rng.randint(0, 3)))
        path = "/" + "/".join(parts) + rng.choice(_SUFFIXES) + rng.choice(_QUERIES)
        urls.append(BASE + path)
    return urls


def _sitelore_checker(robots: str) -> Callable[[str], bool]:
    rules = parse_robots_txt(robots, USER_AGENT)
    return lambda url: is_allowed(rules, url)


def _stdlib_checker(robots: str) -> Callable[[str], bool]:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(robots.splitlines())
    return lambda url: parser.can_fetch(USER_AGENT, url)


def _protego_checker(robots: str) -> Callable[[str], bool] | None:
    try:
        from protego import Protego  # optional: the bench extra
    except ImportError:
        return None
    parser = Protego.parse(robots)
    return lambda url: bool(parser.can_fetch(url, USER_AGENT))


def _checks_per_second(check: Callable[[str], bool], urls: Sequence[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for url in urls:
            check(url)
        best = min(best, time.perf_counter() - start)
    return len(urls) / best


def _agreement(left: Callable[[str], bool], right: Callable[[str], bool], urls: list[str]) -> float:
    return sum(left(url) == right(url) for url in urls) / len(urls)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table; always returns 0."""
    parser = argparse.ArgumentParser(description="robots.txt checks per second")
    parser.add_argument("--urls", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    urls = make_urls(options.urls)
    engines: dict[str, Callable[[str], bool] | None] = {
        "sitelore": _sitelore_checker(ROBOTS_TXT),
        "protego": _protego_checker(ROBOTS_TXT),
        "stdlib": _stdlib_checker(ROBOTS_TXT),
    }
    rule_count = sum(
        line.split(":", 1)[0].strip().lower() in ("allow", "disallow")
        for line in ROBOTS_TXT.splitlines()
    )
    print(f"robots.txt: {rule_count} rules; {len(urls)} URLs; best of {options.rounds} rounds")
    ours = engines["sitelore"]
    assert ours is not None
    base = _checks_per_second(ours, urls, options.rounds)
    print(f"{'engine':<10} {'checks/s':>12} {'sitelore ÷ it':>14} {'agrees':>8}")
    for name, check in engines.items():
        if check is None:
            print(f"{name:<10} {'(not installed)':>12}")
            continue
        rate = base if check is ours else _checks_per_second(check, urls, options.rounds)
        agrees = _agreement(ours, check, urls)
        print(f"{name:<10} {rate:>12,.0f} {base / rate:>13.2f}x {agrees:>8.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
