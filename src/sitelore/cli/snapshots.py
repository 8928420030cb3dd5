"""``sitelore reconvert`` and ``sitelore export``: rebuild from captures, export with them.

Registered on the app by ``cli`` (``register``). ``crawl --capture DIR`` and
``crawl --replay DIR`` live on the crawl command itself. Neither command creates a
store (no store there: exit 2); an export file that cannot be written is a
configuration error (78) naming it, for ``--warc`` and ``--jsonl`` alike.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from sitelore.cli.common import (
    ConfigOpt,
    DbOpt,
    DebugOpt,
    JsonOpt,
    LinksOpt,
    err_console,
    links_flag,
    load_cli_settings,
    out_console,
    print_json,
    run_async,
    setup_logging,
)
from sitelore.core.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from sitelore.adapters.snapshots import WarcExport
    from sitelore.app.rebuild import ReconvertReport
    from sitelore.core.config import Settings
    from sitelore.core.linkstyle import LinkStyle

__all__ = ["register"]

ArchiveOpt = Annotated[
    Path | None,
    typer.Option(
        "--archive",
        metavar="DIR",
        help="Where the capture's WARC files are now, if they were moved or copied.",
    ),
]


def reconvert(
    archive: ArchiveOpt = None,
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Rebuild every captured document from its WARC record with the current converter.

    No network. Documents keep their ids; only those whose title or Markdown changed
    are rewritten (and re-indexed).
    """
    settings = load_cli_settings(config=config, db=db)
    setup_logging(debug, progress=False)

    async def go() -> ReconvertReport:
        from sitelore.app.bootstrap import Runtime

        async with Runtime(settings, create_store=False) as runtime:
            return await runtime.reconvert(archive=archive)

    report = run_async(go())
    if as_json:
        print_json(report.to_json())
    else:
        out_console.print(
            f"reconverted {report.reconverted} of {report.documents} documents: "
            f"{report.changed} changed, {report.unchanged} unchanged; "
            f"{report.no_capture} without a capture, {report.unreadable} unreadable, "
            f"{report.failed} failed, {report.not_indexed} now noindex (left as they were)"
        )
    for problem in report.problems:
        err_console.print(f"warning: {problem}", markup=False)


def _unwritable(path: Path, reason: str) -> ConfigError:
    return ConfigError(f"{path}: cannot write the export: {reason}")


def _check_jsonl_target(path: Path) -> None:
    """Refuse a --jsonl FILE that cannot be written, before anything is written."""
    if path.is_dir():
        raise _unwritable(path, "is a directory")
    if not path.absolute().parent.is_dir():
        raise _unwritable(path, "no such directory")


def _open_jsonl(path: Path) -> TextIO:
    """Open the JSON lines file, or a ConfigError naming it and why."""
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise _unwritable(path, exc.strerror or str(exc)) from exc


async def _export(
    settings: Settings,
    warc: Path | None,
    jsonl: Path | None,
    markdown: Path | None,
    archive: Path | None,
    links: LinkStyle | None,
) -> dict[str, Any]:
    from sitelore.app.bootstrap import Runtime

    result: dict[str, Any] = {}
    async with Runtime(settings, create_store=False) as runtime:
        runtime.store  # noqa: B018 - no store there: fail before writing any file
        if warc is not None:
            report: WarcExport = await runtime.export_warc(warc, archive=archive)
            result["warc"] = report.to_json()
        if jsonl is not None:
            if str(jsonl) == "-":
                written = await runtime.export_jsonl(sys.stdout, links=links)
            else:
                with _open_jsonl(jsonl) as out:
                    written = await runtime.export_jsonl(out, links=links)
            result["jsonl"] = {"file": str(jsonl), "documents": written}
        if markdown is not None:
            written = await runtime.export_markdown(markdown, links=links)
            result["markdown"] = {"folder": str(markdown), "documents": written}
    return result


def export(
    warc: Annotated[
        Path | None,
        typer.Option(
            "--warc",
            metavar="FILE",
            help="Write each document's captured response and its Markdown as WARC 1.1.",
        ),
    ] = None,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl",
            metavar="FILE",
            help="Write one JSON document per line, with provenance ('-' for stdout).",
        ),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            metavar="DIR",
            help="Write one Markdown file per document, with front matter, under DIR "
            "(DIR/host/path.md).",
        ),
    ] = None,
    archive: ArchiveOpt = None,
    links: LinksOpt = None,
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Export the stored documents as a WARC file, JSON lines, Markdown files, or several.

    --links styles the Markdown of the JSON lines and the files; the WARC keeps the
    stored Markdown.
    """
    if warc is None and jsonl is None and markdown is None:
        raise UsageError("export needs --warc FILE, --jsonl FILE or --markdown DIR")
    style = links_flag(links)
    if style is not None and jsonl is None and markdown is None:
        raise UsageError(
            "--links: only with --jsonl or --markdown (the WARC keeps the stored Markdown)"
        )
    if markdown is not None and markdown.exists() and not markdown.is_dir():
        raise _unwritable(markdown, "is not a directory")
    if as_json and jsonl is not None and str(jsonl) == "-":
        raise UsageError("--json and --jsonl - both write to stdout; pick one")
    settings = load_cli_settings(config=config, db=db)
    if jsonl is not None and str(jsonl) != "-":
        _check_jsonl_target(jsonl)
    setup_logging(debug, progress=False)
    result = run_async(_export(settings, warc, jsonl, markdown, archive, style))
    if as_json:
        print_json(result)
        return
    console = err_console if jsonl is not None and str(jsonl) == "-" else out_console
    if "warc" in result:
        part = result["warc"]
        console.print(
            f"wrote {part['documents']} documents ({part['responses']} with their "
            f"captured response) to {part['file']}"
        )
        for missing in part["missingCaptures"]:
            err_console.print(f"warning: capture not exported: {missing}", markup=False)
    if "jsonl" in result:
        part = result["jsonl"]
        console.print(f"wrote {part['documents']} documents to {part['file']}")
    if "markdown" in result:
        part = result["markdown"]
        console.print(f"wrote {part['documents']} Markdown files under {part['folder']}")


def register(app: typer.Typer) -> None:
    """Add ``reconvert`` and ``export`` to the ``sitelore`` command."""
    app.command(name="reconvert")(reconvert)
    app.command(name="export")(export)
