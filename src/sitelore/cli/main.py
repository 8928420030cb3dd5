"""The ``sitelore`` command line: crawl, fetch, search, list, show and demo.

A thin edge over :class:`~sitelore.app.bootstrap.Runtime`. Every error a user can cause
ends as one line on stderr naming the input and the reason, with the exit code of its
class (2 usage, 78 config, 70 internal); a traceback only with ``--debug``. Click's
own usage errors (unknown option, bad value, missing argument) are reported the same
way, and a page that fails (``fetch`` of a 404) is an outcome, reported with exit 0.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitelore import __version__
from sitelore.app.semantic import embedding_alongside
from sitelore.cli import scale as cli_scale
from sitelore.cli import semantic as cli_semantic
from sitelore.cli import serve as cli_serve
from sitelore.cli import snapshots as cli_snapshots
from sitelore.cli import sources as cli_sources
from sitelore.cli.common import (
    AllowPrivateOpt,
    ConfigOpt,
    DbOpt,
    DebugOpt,
    JsonOpt,
    LinksOpt,
    NoRobotsOpt,
    ResolveOpt,
    UserAgentOpt,
    WorkersOpt,
    app,
    crawl_options,
    debugging,
    err_console,
    hit_json,
    invocation,
    links_flag,
    load_cli_settings,
    out_console,
    print_json,
    read_cli_settings,
    reading_store,
    run_async,
    setup_logging,
    with_workers,
)
from sitelore.cli.output import (
    CrawlProgress,
    print_documents,
    print_hits,
    print_summary,
    print_warnings,
)
from sitelore.cli.scale import FrontierOpt, enqueue_command
from sitelore.core.errors import (
    EXIT_CONFIG,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    ErrorKind,
    SiteloreError,
    UsageError,
    first_sitelore_error,
)
from sitelore.core.linkstyle import restyle_links
from sitelore.core.models import CrawlSummary
from sitelore.core.ports import CaptureLinks
from sitelore.core.sections import heading_line

if TYPE_CHECKING:
    from sitelore.core.config import Settings
    from sitelore.core.options import CrawlOptions
    from sitelore.crawl import CrawlRun

__all__ = ["app", "main"]

# --- crawling ------------------------------------------------------------------------


async def _drive(run: CrawlRun, *, show_progress: bool) -> CrawlSummary:
    """Consume a crawl's outcomes, with a progress bar on a terminal."""
    total = run.summary.options.max_pages
    with CrawlProgress(err_console, total=total, enabled=show_progress) as progress:
        async for outcome in run:
            progress.advance(outcome)
    return run.summary


async def _crawl(
    settings: Settings,
    seed: str,
    options: CrawlOptions,
    *,
    show_progress: bool,
    capture: Path | None = None,
    replay: Path | None = None,
    seed_id: str | None = None,
) -> CrawlSummary:
    from sitelore.app.bootstrap import Runtime

    async with Runtime(settings) as runtime:
        snapshots = runtime.snapshots(capture=capture, replay=replay)
        async with (
            runtime.open_crawl(seed, options, snapshots=snapshots, seed_id=seed_id) as run,
            embedding_alongside(runtime.store, settings.semantic_model),
        ):
            return await _drive(run, show_progress=show_progress)


@app.command()
def crawl(
    url: Annotated[str, typer.Argument(help="The start URL.")],
    max_pages: Annotated[
        int | None, typer.Option("--max-pages", help="Pages to fetch (default 25).")
    ] = None,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", help="Link hops from the start (default 2).")
    ] = None,
    same_domain: Annotated[
        bool,
        typer.Option(
            "--same-domain/--any-domain", help="Follow only the start host and subdomains."
        ),
    ] = True,
    path_prefix: Annotated[
        str | None, typer.Option("--path-prefix", help="Follow only paths starting with it.")
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Skip URLs matching this glob (on the path if it starts with /; repeatable).",
        ),
    ] = None,
    delay: Annotated[
        float | None, typer.Option("--delay", help="Seconds between requests to one origin.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", help="Requests in flight overall (default 4).")
    ] = None,
    no_robots: NoRobotsOpt = False,
    render: Annotated[
        bool,
        typer.Option("--render", help="Run pages' JavaScript in headless Chromium (render extra)."),
    ] = False,
    sitemap: Annotated[
        bool,
        typer.Option(
            "--sitemap", help="Also seed from robots.txt Sitemap: lines and /sitemap.xml."
        ),
    ] = False,
    capture: Annotated[
        Path | None,
        typer.Option(
            "--capture",
            metavar="DIR",
            help="Also record every response as WARC 1.1 into DIR (created if needed).",
        ),
    ] = None,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            metavar="DIR",
            help="Serve every response from the WARC archive in DIR; never use the network.",
        ),
    ] = None,
    seed_id: Annotated[
        str | None,
        typer.Option(
            "--seed-id", help="Name of this crawl's captures (default: the normalised URL)."
        ),
    ] = None,
    frontier: FrontierOpt = None,
    workers: WorkersOpt = None,
    user_agent: UserAgentOpt = None,
    db: DbOpt = None,
    allow_private: AllowPrivateOpt = None,
    resolve: ResolveOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Crawl a site from URL, breadth first, within the limits, and store every page.

    With --replay DIR nothing is fetched: every response comes from the archive a
    --capture DIR crawl wrote, and a page it lacks fails alone (no-snapshot). A
    --replay DIR that holds no archive is reported as one invalid-config page (exit 78).
    """
    if capture is not None and replay is not None:
        raise UsageError("--capture and --replay cannot be used together")
    settings = load_cli_settings(
        config=config, db=db, user_agent=user_agent, allow_private=allow_private, resolve=resolve
    )
    settings = with_workers(settings, workers)
    options = crawl_options(
        max_pages=max_pages,
        max_depth=max_depth,
        same_domain=same_domain,
        path_prefix=path_prefix,
        exclude_patterns=tuple(exclude or ()),
        delay=delay,
        concurrency=concurrency,
        respect_robots=not no_robots,
        render=render,
        sitemap=sitemap,
    )
    if frontier is not None:  # scale-out: queue the crawl for `sitelore worker` processes
        setup_logging(debug, progress=False)
        enqueue_command(
            settings, url, options, frontier, as_json=as_json, capture=capture, replay=replay
        )
        return
    show_progress = err_console.is_terminal and not debugging(debug)
    setup_logging(debug, progress=show_progress)
    summary = run_async(
        _crawl(
            settings,
            url,
            options,
            show_progress=show_progress,
            capture=capture,
            replay=replay,
            seed_id=seed_id,
        )
    )
    if as_json:
        print_json(summary.to_json())
    else:
        print_summary(out_console, summary)
    print_warnings(err_console, summary)
    if any(p.error and p.error.kind is ErrorKind.INVALID_CONFIG for p in summary.pages):
        raise typer.Exit(EXIT_CONFIG)


@app.command()
def fetch(
    url: Annotated[str, typer.Argument(help="The page to fetch.")],
    no_robots: NoRobotsOpt = False,
    workers: WorkersOpt = None,
    user_agent: UserAgentOpt = None,
    db: DbOpt = None,
    allow_private: AllowPrivateOpt = None,
    resolve: ResolveOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Fetch one page (no link following), convert it and store it.

    A page that fails (a 404, a timeout) is reported, on stderr and in the --json
    outcome's error, and the command still exits 0: the fetch ran.
    """
    settings = load_cli_settings(
        config=config, db=db, user_agent=user_agent, allow_private=allow_private, resolve=resolve
    )
    settings = with_workers(settings, workers)
    options = crawl_options(max_pages=1, max_depth=0, respect_robots=not no_robots, concurrency=1)
    setup_logging(debug, progress=False, quiet=True)
    summary = run_async(_crawl(settings, url, options, show_progress=False))
    page = summary.pages[0] if summary.pages else None
    if as_json:
        print_json(page.to_json() if page else None)
    elif page is not None and page.duplicate_of is not None:
        line = f"duplicate of {page.duplicate_of}  {page.title}  {page.final_url}"
        out_console.print(line, markup=False)  # a page's title is its text, not markup
    elif page is not None and page.error is None:
        line = f"stored {page.document_id}  {page.title}  {page.final_url}"
        out_console.print(line, markup=False)
    if page is None:
        reason = summary.truncated_reason or "no request was made"
        err_console.print(f"sitelore: not fetched ({reason}): {summary.seed}", markup=False)
    elif page.error is not None:
        err_console.print(
            f"sitelore: failed ({page.error.kind}): {page.error.message}", markup=False
        )


# --- reading the store -----------------------------------------------------------------


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words to search for (plain text).")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="Results.")] = 10,
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Search the stored documents: the best pages for a question, each by its best section.

    With the semantic extra and section vectors (reindex --semantic) the ranking is
    hybrid; otherwise lexical, and a line on stderr (a field in --json) says why.
    """
    settings = read_cli_settings(config=config, db=db)
    ranked = run_async(
        cli_semantic.search_store(settings.store, settings.semantic_model, query, limit)
    )
    if as_json:
        hits = [hit_json(h) for h in ranked.hits]
        print_json({"query": query, **cli_semantic.ranking_json(ranked), "hits": hits})
    else:
        print_hits(out_console, query, cli_semantic.hits_of(ranked))


@app.command()
def reindex(
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Also compute every section's vector (semantic extra) for hybrid search.",
        ),
    ] = False,
) -> None:
    """Cut every stored document into search sections again, from its stored Markdown."""
    settings = load_cli_settings(config=config, db=db)
    if semantic:
        bar = err_console.is_terminal and not as_json and not debugging(debug)
        done, embedded = run_async(cli_semantic.embed_store(settings, show_progress=bar))
        if as_json:
            print_json({"documents": done, "sectionsEmbedded": embedded})
        else:
            out_console.print(f"re-sectioned {done} documents, embedded {embedded} sections")
        return

    async def go() -> int:
        async with reading_store(settings.store) as store:
            return await store.reindex()

    done = run_async(go())
    if as_json:
        print_json({"documents": done})
    else:
        out_console.print(f"re-sectioned {done} documents")


@app.command(name="list")
def list_documents(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Documents to list.")] = 100,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Documents to skip.")] = 0,
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """List stored documents, most recently updated first."""
    settings = read_cli_settings(config=config, db=db)

    async def go() -> tuple[int, list[Any]]:
        async with reading_store(settings.store) as store:
            return await store.count(), await store.list(limit=limit, offset=offset)

    total, docs = run_async(go())
    if as_json:
        print_json(
            {
                "total": total,
                "documents": [
                    {
                        "id": d.id,
                        "url": d.url,
                        "title": d.title,
                        "updatedAt": d.updated_at.isoformat(),
                    }
                    for d in docs
                ],
            }
        )
    else:
        print_documents(out_console, total, docs)


@app.command()
def show(
    id_or_url: Annotated[str, typer.Argument(metavar="ID_OR_URL", help="Document id or URL.")],
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    links: LinksOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Print one stored document as Markdown (or JSON with its metadata)."""
    asked = links_flag(links)
    settings = read_cli_settings(config=config, db=db)
    style = asked or settings.links

    async def go() -> Any:
        async with reading_store(settings.store) as store:
            doc = await store.get(id_or_url)
            capture = await store.capture_of(id_or_url) if isinstance(store, CaptureLinks) else None
            return doc, capture

    doc, capture = run_async(go())
    if doc is None:
        raise UsageError(f"{id_or_url}: no such document in the store")
    if as_json:
        from sitelore.core.document_wire import DocumentOut  # only --json needs pydantic's shape

        print_json(DocumentOut.from_stored(doc, capture=capture, links=style).to_json())
    else:
        gone = f"(removed from the site {doc.removed_at:%Y-%m-%d})\n\n" if doc.removed_at else ""
        markdown = restyle_links(doc.markdown, style).rstrip()
        head, body = _title_line(doc.title, markdown)
        sys.stdout.write(f"{head}\n\n<{doc.url}>\n\n{gone}{body}\n")


def _title_line(title: str, markdown: str) -> tuple[str, str]:
    """The line ``show`` starts with, and the Markdown after it.

    The page's own first heading when it is the title (printing both said it twice),
    else ``# title`` before the whole Markdown.
    """
    first, _, rest = markdown.partition("\n")
    heading = heading_line(first)
    if heading is not None and heading[1].split() == title.split():
        return first, rest.lstrip("\n")
    return f"# {title}", markdown


@app.command()
def delete(
    ids: Annotated[list[str], typer.Argument(metavar="ID_OR_URL...", help="Document ids or URLs.")],
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Delete stored documents with their sections and search entries (a crawl may fetch
    them again). Those not in the store are named, and the exit code is then 2."""
    settings = read_cli_settings(config=config, db=db)

    async def go() -> list[tuple[str, bool]]:
        async with reading_store(settings.store) as store:
            # Looked up first: an id and the URL of one document both name it.
            found = {key: await store.get(key) for key in dict.fromkeys(ids)}
            for doc_id in dict.fromkeys(doc.id for doc in found.values() if doc is not None):
                await store.delete(doc_id)
        return [(key, doc is not None) for key, doc in found.items()]

    results = run_async(go())
    deleted = [key for key, found in results if found]
    missing = [key for key, found in results if not found]
    if as_json:
        print_json({"deleted": deleted, "missing": missing})
    else:
        out_console.print(f"deleted {len(deleted)} document{'' if len(deleted) == 1 else 's'}")
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise UsageError(f"{missing[0]}: no such document in the store{more}")


# --- the demo --------------------------------------------------------------------------


@app.command()
def demo(
    db: Annotated[str, typer.Option("--db", help="Store for the demo.")] = ".demo/sitelore.db",
    query: Annotated[
        str, typer.Option("--query", help="What to search for after.")
    ] = "how do I retry a failed task with backoff?",
    site: Annotated[
        Path | None, typer.Option("--site", help="Site folder to serve (default: bundled).")
    ] = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Serve the bundled example docs site on loopback, crawl it, show and search the result."""
    from sitelore.adapters.demo_site import bundled_site_path, serve_site  # aiohttp: the demo only
    from sitelore.app.bootstrap import Runtime
    from sitelore.core.config import Settings
    from sitelore.core.options import CrawlOptions

    root = site or bundled_site_path()
    if not root.is_dir():
        raise UsageError(f"{root}: example site folder not found")
    setup_logging(debug, progress=True)
    settings = Settings(store=db, allow_private=("127.0.0.1",))

    async def go() -> tuple[CrawlSummary, list[Any]]:
        async with serve_site(root) as base:
            err_console.print(f"serving {root} at {base}")
            options = CrawlOptions(max_pages=50, max_depth=3, delay=0.0, concurrency=4)
            async with Runtime(settings) as runtime, runtime.open_crawl(base + "/", options) as run:
                summary = await _drive(run, show_progress=err_console.is_terminal)
                hits = await runtime.store.search(query, limit=5)
            return summary, hits

    summary, hits = run_async(go())
    if as_json:
        print_json({"crawl": summary.to_json(), "search": [hit_json(h) for h in hits]})
        return
    print_summary(out_console, summary)
    print_warnings(err_console, summary)
    print_hits(out_console, query, hits)
    out_console.print(f"\nstore: {db}   try: sitelore search --db {db} 'install'")


@app.command()
def version() -> None:
    """Print the version."""
    out_console.print(f"sitelore {__version__}")


# --- entry point -----------------------------------------------------------------------


# Feature command groups live in their own modules; each adds its commands here, once.
for _feature in (cli_serve, cli_snapshots, cli_sources, cli_scale):
    _feature.register(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and exit with the code of what happened."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    sys.exit(_invoke(args or ["--help"], debug=debug))


# The root of the argument errors of Typer's (vendored) click: usage errors, bad values,
# missing arguments, files that will not open. All about the arguments, so exit 2.
_CLICK_ERROR = typer.TyperException
_INTERRUPTED = 130
_PINNED = frozenset({EXIT_OK, EXIT_USAGE, EXIT_CONFIG, EXIT_INTERNAL, _INTERRUPTED})


def _narrowed(args: Sequence[str]) -> typer.Typer:
    """The app with only the command ``args`` start with, when they start with one.

    Typer builds a click command (signature, type hints, parameters) for every
    registered command on each run, a large part of a read command's start-up; a run
    starting with a command name parses exactly as it would with all of them. Anything
    else (``--help``, global options first, an unknown name) gets the whole app.
    """
    if not args:
        return app
    for info in app.registered_commands:
        callback = info.callback
        name = info.name or (callback and typer.main.get_command_name(callback.__name__))
        if name == args[0]:
            narrowed = copy.copy(app)
            narrowed.registered_commands = [info]
            return narrowed
    return app


def _invoke(args: list[str], *, debug: bool) -> int:
    """Run the app on ``args`` and return the pinned exit code of what happened.

    Outside standalone mode click raises its usage errors instead of printing its
    three-line usage block, and returns the code of ``--help`` (0) or of a
    ``typer.Exit``; each error becomes one line here.
    """
    try:
        with invocation():
            code = _narrowed(args)(args=args, prog_name="sitelore", standalone_mode=False)
    except _CLICK_ERROR as exc:
        return _fail_usage(exc)
    except (typer.Abort, KeyboardInterrupt):
        code = _INTERRUPTED
    except SystemExit as exc:
        return _system_exit(exc, debug=debug)
    except SiteloreError as exc:
        return _fail(exc, exc.exit_code, debug=debug)
    except BaseExceptionGroup as group:  # raised inside a task group: report what it holds
        first = first_sitelore_error(group)
        if first is None:
            return _fail(group, EXIT_INTERNAL, debug=debug, internal=True)
        return _fail(first, first.exit_code, debug=debug)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 70
        return _fail(exc, EXIT_INTERNAL, debug=debug, internal=True)
    if code == _INTERRUPTED:  # Ctrl-C: typer turns KeyboardInterrupt into Exit(130)
        err_console.print("interrupted: pages stored so far are kept")
    return code if isinstance(code, int) else EXIT_OK


def _system_exit(exc: SystemExit, *, debug: bool) -> int:
    """The pinned code for a ``sys.exit`` from inside the app."""
    if exc.code is None or isinstance(exc.__context__, BrokenPipeError):
        return EXIT_OK  # typer exits 1 when the reader closed stdout (``| head``): it ran
    if isinstance(exc.code, int) and exc.code in _PINNED:
        return exc.code
    return _fail(RuntimeError(f"exit status {exc.code}"), EXIT_INTERNAL, debug=debug, internal=True)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail_usage(exc: Exception) -> int:
    """Click's usage error as one line naming the option, with where to find help."""
    message = _one_line(getattr(exc, "format_message", exc.__str__)())
    ctx = getattr(exc, "ctx", None)
    hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
    sys.stderr.write(f"sitelore: error: {message}{hint}\n")
    return EXIT_USAGE


def _fail(exc: BaseException, code: int, *, debug: bool, internal: bool = False) -> int:
    if debug:
        err_console.print_exception(show_locals=False)
    message = _one_line(str(exc)) or type(exc).__name__
    if internal:
        hint = "" if debug else " (run again with --debug for a traceback)"
        sys.stderr.write(f"sitelore: internal error: {message}{hint}\n")
    else:
        sys.stderr.write(f"sitelore: error: {message}\n")
    return code
