"""What every ``sitelore`` command shares: the app, consoles, common options, settings.

Feature commands live in their own ``cli_*`` modules and register on :data:`app`
through a ``register(app)`` function that ``cli`` calls; they import from here, never
from ``cli`` (which would be a cycle). ``--config`` and ``--debug`` are also accepted
before the command name (``sitelore --config F sources``); the app's callback keeps
them for :func:`global_options`, and a command's own flag wins over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from sitelore.core.config_read import ReadSettings, read_settings
from sitelore.core.errors import ConfigError, SiteloreError, UsageError
from sitelore.core.linkstyle import LINK_STYLES, LinkStyle
from sitelore.core.models import SearchHit

if TYPE_CHECKING:
    from pydantic import BaseModel

    from sitelore.core.config import Settings
    from sitelore.core.options import CrawlOptions
    from sitelore.core.ports import Store

__all__ = [
    "AllowPrivateOpt",
    "ConfigOpt",
    "DbOpt",
    "DebugOpt",
    "GlobalOptions",
    "JsonOpt",
    "LinksOpt",
    "NoRobotsOpt",
    "ResolveOpt",
    "UserAgentOpt",
    "WorkersOpt",
    "app",
    "crawl_options",
    "debugging",
    "err_console",
    "flag_checked",
    "global_options",
    "hit_json",
    "invocation",
    "links_flag",
    "load_cli_settings",
    "out_console",
    "print_json",
    "read_cli_settings",
    "reading_store",
    "run_async",
    "settings_path",
    "settings_text",
    "setup_logging",
    "with_workers",
]

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")

# ``sitelore`` alone shows the help: ``cli.main`` asks for ``--help`` then, so no
# ``no_args_is_help`` here (click reports that as a usage error, on stderr).
app = typer.Typer(
    name="sitelore",
    help="Turn documentation sites into a local, searchable Markdown store, politely and safely.",
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
        metavar="HOST_OR_CIDR",
        help=(
            "Allow this private address or CIDR, or let this host name resolve to a "
            "private address (operator opt-in; repeatable)."
        ),
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
LinksOpt = Annotated[
    str | None,
    typer.Option(
        "--links",
        metavar="STYLE",
        help="Links as inline [text](url), reference [text][1] with the URLs listed at "
        "the end, or none (text only); default: the links setting (inline).",
    ),
]


def links_flag(value: str | None) -> LinkStyle | None:
    """The ``--links`` flag checked; None (not given) means the operator's ``links`` setting.

    Raises:
        UsageError: not one of the styles, naming the flag and its value.
    """
    if value is None:
        return None
    for style in LINK_STYLES:
        if value == style:
            return style
    raise UsageError(f"--links {value}: must be one of {', '.join(LINK_STYLES)}")


WorkersOpt = Annotated[
    int | None,
    typer.Option("--workers", help="Processes converting pages (default: the machine's cores)."),
]


@dataclasses.dataclass(frozen=True, slots=True)
class GlobalOptions:
    """``--config`` and ``--debug`` given before the command name."""

    config: Path | None = None
    debug: bool = False


_NO_GLOBALS = GlobalOptions()
#: This invocation's global options (set by the app's callback, before each command).
_globals: contextvars.ContextVar[GlobalOptions] = contextvars.ContextVar("sitelore_globals")


def global_options() -> GlobalOptions:
    """The ``--config`` / ``--debug`` given before the command name in this invocation."""
    return _globals.get(_NO_GLOBALS)


@contextlib.contextmanager
def invocation() -> Iterator[None]:
    """One run of the app: global options set inside do not outlive it."""
    token = _globals.set(_NO_GLOBALS)
    try:
        yield
    finally:
        _globals.reset(token)


def _print_version(wanted: bool) -> None:
    """``--version``: print the version and stop, before any command runs."""
    if wanted:
        from sitelore import __version__

        out_console.print(f"sitelore {__version__}")
        raise typer.Exit


@app.callback()
def _global(
    config: ConfigOpt = None,
    debug: DebugOpt = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Turn documentation sites into a local, searchable Markdown store, politely and safely."""
    _globals.set(GlobalOptions(config=config, debug=debug))


def debugging(debug: bool) -> bool:
    """True when ``--debug`` was given, after the command name or before it."""
    return debug or global_options().debug


_FLAG_OF_FIELD = {
    "max_pages": "--max-pages",
    "max_depth": "--max-depth",
    "delay": "--delay",
    "concurrency": "--concurrency",
    "path_prefix": "--path-prefix",
    "exclude_patterns": "--exclude",
}


_FLAG_OF_SETTING = {
    "store": "--db",
    "user_agent": "--user-agent",
    "allow_private": "--allow-private",
    "resolve": "--resolve",
}


def settings_path(config: Path | None) -> Path | None:
    """The settings file of a command: ``--config`` (after the command name, else
    before it), else ``SITELORE_CONFIG``, else ``./sitelore.toml`` when it exists
    (None: defaults only)."""
    config = config if config is not None else global_options().config
    if config is not None:
        return config
    if os.environ.get("SITELORE_CONFIG"):
        return Path(os.environ["SITELORE_CONFIG"])
    default = Path("sitelore.toml")
    return default if default.is_file() else None


def settings_text(path: Path | None) -> str | None:
    """The settings file's text (None: no file); an unreadable file is a ConfigError."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read settings file: {exc.strerror}") from exc


def read_cli_settings(*, config: Path | None, db: str | None) -> ReadSettings:
    """The settings of a command that only reads the store (``search``, ``list``, ``show``).

    Answered without building the full settings model when that is certain to give
    the same (:func:`sitelore.core.config_read.read_settings`); otherwise as
    :func:`load_cli_settings`, with its errors.
    """
    text = settings_text(settings_path(config))
    found = read_settings(text, environ=os.environ, store=db)
    if found is not None:
        return found
    full = load_cli_settings(config=config, db=db)
    return ReadSettings(store=full.store, links=full.links, semantic_model=full.semantic_model)


@contextlib.asynccontextmanager
async def reading_store(location: str) -> AsyncIterator[Store]:
    """The store at ``location`` for a command on an existing store: never created, then closed.

    A location without a store raises ``NoStoreError`` (exit 2), as
    ``Runtime(settings, create_store=False)`` does.
    """
    from sitelore.adapters.store import open_store

    store = open_store(location, create=False)
    try:
        yield store
    finally:
        await store.close()


def load_cli_settings(
    *,
    config: Path | None,
    db: str | None = None,
    user_agent: str | None = None,
    allow_private: Sequence[str] | None = None,
    resolve: Sequence[str] | None = None,
) -> Settings:
    """Settings for a command: defaults < settings file < environment < flags.

    Flags are validated with the rest (a bad one is a UsageError naming it); the
    ``--resolve`` and ``--allow-private`` entries are parsed here too, so a bad flag
    exits 2 and a bad entry of the settings file 78 naming the file.
    """
    from sitelore.core.config import load_settings
    from sitelore.core.guard import parse_resolve_entry, resolve_problem

    path = settings_path(config)
    text = settings_text(path)
    source = str(path or "settings")
    base = load_settings(text, source=source, environ=os.environ)
    for entry in base.resolve:
        try:
            parse_resolve_entry(entry)
        except UsageError as exc:
            raise ConfigError(f"{source}: resolve {resolve_problem(exc)}") from exc
    for entry in resolve or ():
        parse_resolve_entry(entry)  # UsageError naming --resolve and the entry
    _check_allow_entries(
        base.allow_private, lambda why: ConfigError(f"{source}: allow_private: {why}")
    )
    _check_allow_entries(allow_private or (), lambda why: UsageError(f"--allow-private: {why}"))
    overrides: dict[str, Any] = {"store": db, "user_agent": user_agent}
    if allow_private:
        overrides["allow_private"] = (*base.allow_private, *allow_private)
    if resolve:
        overrides["resolve"] = (*base.resolve, *resolve)
    return load_settings(
        text, source=source, environ=os.environ, overrides=overrides, flags=_FLAG_OF_SETTING
    )


def with_workers(settings: Settings, workers: int | None) -> Settings:
    """``settings`` with ``--workers`` applied; a bad value is a UsageError naming it."""
    if workers is None:
        return settings
    from sitelore.core.config import ConvertSettings

    changed = {**settings.convert.model_dump(), "workers": workers}
    convert = flag_checked(ConvertSettings, changed, {"workers": "--workers"})
    return settings.model_copy(update={"convert": convert})


def _check_allow_entries(entries: Sequence[str], error: Callable[[str], SiteloreError]) -> None:
    """Raise ``error(why)`` for the first entry that is no address, CIDR or host name."""
    from sitelore.core.guard import parse_allow_entry

    for entry in entries:
        try:
            parse_allow_entry(entry)
        except ValueError as exc:
            raise error(str(exc)) from exc


def flag_checked(model: type[M], values: Mapping[str, Any], flags: Mapping[str, str]) -> M:
    """``values`` validated as ``model``; a bad one is a UsageError naming its flag.

    ``flags`` maps field names to the flags that set them (a field not in it is named
    as it is).
    """
    from pydantic import ValidationError

    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "options"
        raise UsageError(f"{flags.get(field, field)}: {first['msg']}") from exc


def crawl_options(**values: Any) -> CrawlOptions:
    """Validate crawl options given as flags; a bad value is a UsageError naming the flag."""
    from sitelore.core.options import CrawlOptions

    given = {k: v for k, v in values.items() if v is not None}
    return flag_checked(CrawlOptions, given, _FLAG_OF_FIELD)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run one command's coroutine on a fresh event loop."""
    return asyncio.run(coro)


def setup_logging(debug: bool, *, progress: bool, quiet: bool = False) -> None:
    """Log lines to stderr: INFO per page off a terminal, WARNING under a progress bar.

    ``quiet`` (one-page commands, whose result says it all): WARNING too. ``--debug``
    (either placement) logs everything.
    """
    if debugging(debug):
        level = logging.DEBUG
    else:
        level = logging.WARNING if progress or quiet else logging.INFO
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    for noisy in ("charset_normalizer", "aiohttp"):
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
        "headingPath": list(hit.heading_path),
        "anchorUrl": hit.anchor_url or hit.url,
        "section": hit.section,
        "snippet": hit.snippet,
        "score": hit.score,
    }
