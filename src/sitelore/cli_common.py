"""What every ``sitelore`` command shares: the app, consoles, common options, settings.

Feature commands live in their own ``cli_*`` modules and register on :data:`app`
through a ``register(app)`` function that ``cli`` calls; they import from here, never
from ``cli`` (which would be a cycle).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from sitelore.config import Settings, load_settings
from sitelore.errors import ConfigError, UsageError
from sitelore.models import CrawlOptions, SearchHit

__all__ = [
    "AllowPrivateOpt",
    "ConfigOpt",
    "DbOpt",
    "DebugOpt",
    "JsonOpt",
    "NoRobotsOpt",
    "ResolveOpt",
    "UserAgentOpt",
    "app",
    "crawl_options",
    "err_console",
    "hit_json",
    "load_cli_settings",
    "out_console",
    "print_json",
    "run_async",
    "settings_path",
    "setup_logging",
]

T = TypeVar("T")

app = typer.Typer(
    name="sitelore",
    help="Turn documentation sites into a local, searchable Markdown store, politely and safely.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

# Options shared by several commands.
DbOpt = Annotated[
    str | None,
    typer.Option("--db", help="Store path or URL (default ./sitelore.db; env SITELORE_DB)."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", help="Settings file (default: SITELORE_CONFIG, ./sitelore.toml)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")]
AllowPrivateOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-private",
        help="Allow this private address or CIDR (operator opt-in; repeatable).",
    ),
]
ResolveOpt = Annotated[
    list[str] | None,
    typer.Option("--resolve", help="Pin HOST:PORT:ADDR like curl --resolve (repeatable)."),
]
UserAgentOpt = Annotated[
    str | None, typer.Option("--user-agent", help="User-Agent to send and to match robots.txt.")
]
NoRobotsOpt = Annotated[bool, typer.Option("--no-robots", help="Do not fetch or obey robots.txt.")]

_FLAG_OF_FIELD = {
    "max_pages": "--max-pages",
    "maxPages": "--max-pages",
    "max_depth": "--max-depth",
    "maxDepth": "--max-depth",
    "delay": "--delay",
    "concurrency": "--concurrency",
    "path_prefix": "--path-prefix",
    "pathPrefix": "--path-prefix",
    "exclude_patterns": "--exclude",
    "excludePatterns": "--exclude",
}


def _from_env() -> bool:
    return bool(os.environ.get("SITELORE_CONFIG"))


def settings_path(config: Path | None) -> Path | None:
    """The settings file of a command: ``--config``, else ``SITELORE_CONFIG``, else
    ``./sitelore.toml`` when it exists (None: defaults only)."""
    if config is not None:
        return config
    if _from_env():
        return Path(os.environ["SITELORE_CONFIG"])
    default = Path("sitelore.toml")
    return default if default.is_file() else None


def load_cli_settings(
    *,
    config: Path | None,
    db: str | None = None,
    user_agent: str | None = None,
    allow_private: Sequence[str] | None = None,
    resolve: Sequence[str] | None = None,
) -> Settings:
    """Settings for a command: defaults < settings file < environment < flags."""
    path = settings_path(config)
    text = None
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read settings file: {exc.strerror}") from exc
    base = load_settings(text, source=str(path or "settings"), environ=os.environ)
    overrides: dict[str, Any] = {"store": db, "user_agent": user_agent}
    if allow_private:
        overrides["allow_private"] = (*base.allow_private, *allow_private)
    if resolve:
        overrides["resolve"] = (*base.resolve, *resolve)
    return base.model_copy(update={k: v for k, v in overrides.items() if v is not None})


def crawl_options(**values: Any) -> CrawlOptions:
    """Validate crawl options given as flags; a bad value is a UsageError naming the flag."""
    try:
        return CrawlOptions.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "options"
        raise UsageError(f"{_FLAG_OF_FIELD.get(field, field)}: {first['msg']}") from exc


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run one command's coroutine on a fresh event loop."""
    return asyncio.run(coro)


def setup_logging(debug: bool, *, progress: bool) -> None:
    """Log lines to stderr: INFO per page off a terminal, WARNING under a progress bar."""
    level = logging.DEBUG if debug else (logging.WARNING if progress else logging.INFO)
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    for noisy in ("trafilatura", "htmldate", "courlan", "charset_normalizer", "aiohttp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def print_json(data: object) -> None:
    """Write one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=None) + "\n")


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A search hit as JSON."""
    return {
        "id": hit.id,
        "url": hit.url,
        "title": hit.title,
        "snippet": hit.snippet,
        "score": hit.score,
    }
