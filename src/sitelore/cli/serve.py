"""The ``sitelore serve`` (REST API) and ``sitelore mcp`` (MCP server) commands.

Each command builds one Runtime from the operator's settings (file, environment,
flags), refuses to listen beyond loopback without an API key, and runs the app under
uvicorn on a socket it bound itself (so a busy port is a one-line error, exit 78).
Politeness is the operator's too: ``--delay`` is the least delay a request gets and
``--allow-render`` lets requests ask for rendering; robots.txt is always obeyed.
:func:`running_server` is also what the tests use to serve an app on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated

import typer

from sitelore.cli.common import (
    AllowPrivateOpt,
    ConfigOpt,
    DbOpt,
    DebugOpt,
    ResolveOpt,
    UserAgentOpt,
    WorkersOpt,
    err_console,
    flag_checked,
    load_cli_settings,
    run_async,
    setup_logging,
    with_workers,
)
from sitelore.core.errors import ConfigError, UsageError
from sitelore.core.models import DEFAULT_DELAY
from sitelore.server.asgi_guard import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_BODY_BYTES,
    ASGIApp,
    ConnectionLimits,
    check_bind,
)

if TYPE_CHECKING:
    from sitelore.app.wire import RemotePolicy
    from sitelore.core.config import Settings
    from sitelore.server.host_guard import HostPolicy

__all__ = ["RunningServer", "register", "running_server"]

_GRACEFUL_SECONDS = 5

HostOpt = Annotated[
    str,
    typer.Option("--host", help="Address to listen on; beyond loopback needs an API key."),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="SITELORE_API_KEY",
        show_default=False,
        help="Require 'Authorization: Bearer KEY' (16+ characters; env SITELORE_API_KEY).",
    ),
]
MaxCrawlsOpt = Annotated[
    int, typer.Option("--max-crawls", min=1, max=64, help="Crawls running at once.")
]
MaxBodyOpt = Annotated[
    int,
    typer.Option("--max-body-bytes", min=1024, help="Largest request body accepted."),
]
CapPagesOpt = Annotated[
    int | None,
    typer.Option("--cap-max-pages", help="Hard cap on pages per request (default: settings)."),
]
CapDepthOpt = Annotated[
    int | None,
    typer.Option("--cap-max-depth", help="Hard cap on depth per request (default: settings)."),
]

AllowedHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        show_default=False,
        help="Also answer requests for this Host name (repeatable; * for any). "
        "Others get 421; the bind address and, on loopback, every loopback name pass.",
    ),
]
CorsOriginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--cors-origin",
        show_default=False,
        help="Allow browser requests from this origin, e.g. https://app.example "
        "(repeatable; CORS is off without one). Other foreign origins get 403.",
    ),
]

ReadTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--read-timeout",
        min=0.1,
        max=3600,
        help="Seconds a request's headers and body may take to arrive; slower ones are closed.",
    ),
]
MaxConnectionsOpt = Annotated[
    int,
    typer.Option("--max-connections", min=1, help="Connections open at once (more get 503)."),
]
MaxClientConnectionsOpt = Annotated[
    int,
    typer.Option(
        "--max-client-connections",
        min=1,
        help="Connections open at once from one client address (more are closed).",
    ),
]


def _limits(read_timeout: float, max_connections: int, per_client: int) -> ConnectionLimits:
    return ConnectionLimits(
        read_timeout=read_timeout, max_connections=max_connections, per_client=per_client
    )


RemoteDelayOpt = Annotated[
    float,
    typer.Option(
        "--delay",
        min=0,
        max=60,
        help="Seconds between requests to one origin: the default for requests, and the "
        "least they may ask for (smaller asks are raised to it).",
    ),
]
AllowRenderOpt = Annotated[
    bool,
    typer.Option(
        "--allow-render",
        help="Let requests ask for render: true (headless Chromium; the render extra).",
    ),
]


def _remote(delay: float, allow_render: bool) -> RemotePolicy:
    """The operator's rules for remote requests; rendering needs the render extra."""
    from sitelore.app.wire import RemotePolicy

    if allow_render:
        _need("playwright", "render")
    return RemotePolicy(delay=delay, allow_render=allow_render)


@dataclasses.dataclass(frozen=True, slots=True)
class RunningServer:
    """An app being served: its base URL, and a way to wait until it stops."""

    url: str
    _task: asyncio.Task[None]

    async def wait(self) -> None:
        """Return when the server has stopped (Ctrl-C or SIGTERM)."""
        await self._task


def _need(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or say which extra installs it (exit 78)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{module} is not installed: pip install 'sitelore[{extra}]'") from exc


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise ConfigError(f"{host}:{port}: cannot listen: {exc.strerror or exc}") from exc
    return sock


@contextlib.asynccontextmanager
async def running_server(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    stop_on_signals: bool = False,
    limits: ConnectionLimits = DEFAULT_LIMITS,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[RunningServer]:
    """Serve ``app`` with uvicorn on ``host:port`` (0: any free port) until the block ends.

    With ``stop_on_signals`` (the commands), SIGINT and SIGTERM stop the server
    gracefully and the process exits normally; otherwise (tests) signal handling is
    left alone. uvicorn's own handling is replaced either way, because it re-raises
    the signal after its graceful shutdown, killing the process after all.
    ``on_stop`` runs first when the server is asked to stop (it ends the app's long
    answers, such as event streams, so the graceful shutdown need not wait them out).
    Connections are held to ``limits`` (:mod:`sitelore.server.serve_limits`).
    """
    uvicorn = _need("uvicorn", "api")
    guarded_h11 = _need("sitelore.server.serve_limits", "api").guarded_h11
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        http=guarded_h11(limits),
        log_level="warning",
        access_log=False,
        server_header=False,
        lifespan="on",
        limit_concurrency=limits.max_connections,
        timeout_graceful_shutdown=_GRACEFUL_SECONDS,
    )
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []

    async def stop() -> None:
        if on_stop is not None:
            await on_stop()
        server.should_exit = True

    def on_signal() -> None:
        if stopping:  # a second signal: stop now
            server.force_exit = True
        else:
            stopping.append(loop.create_task(stop(), name="sitelore-stop"))

    signals = (signal.SIGINT, signal.SIGTERM) if stop_on_signals else ()
    for signum in signals:
        loop.add_signal_handler(signum, on_signal)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="sitelore-uvicorn")
    try:
        while not server.started:
            if task.done():
                await task
                raise ConfigError(f"{host}:{port}: the server stopped while starting")
            await asyncio.sleep(0.01)
        shown = f"[{host}]" if ":" in host else host
        yield RunningServer(f"http://{shown}:{bound_port}", task)
    finally:
        if not stopping:
            stopping.append(loop.create_task(stop(), name="sitelore-stop"))
        await asyncio.wait([task, *stopping])
        sock.close()
        for signum in signals:
            loop.remove_signal_handler(signum)


def _hosts(
    host: str, settings: Settings, allowed_host: list[str] | None, cors_origin: list[str] | None
) -> HostPolicy:
    """The Host and Origin values served: the bind, the settings' and the flags' lists."""
    from sitelore.server.host_guard import HostPolicy

    return HostPolicy(
        host,
        allowed_hosts=(*settings.allowed_hosts, *(allowed_host or ())),
        cors_origins=(*settings.cors_origins, *(cors_origin or ())),
    )


def _settings(
    *,
    config: Path | None,
    db: str | None,
    user_agent: str | None,
    allow_private: list[str] | None,
    resolve: list[str] | None,
    cap_max_pages: int | None,
    cap_max_depth: int | None,
    workers: int | None,
) -> Settings:
    settings = load_cli_settings(
        config=config, db=db, user_agent=user_agent, allow_private=allow_private, resolve=resolve
    )
    settings = with_workers(settings, workers)
    caps = {"max_pages": cap_max_pages, "max_depth": cap_max_depth}
    changes = {key: value for key, value in caps.items() if value is not None}
    if not changes:
        return settings
    from sitelore.core.options import Limits

    changed = {**settings.limits.model_dump(), **changes}
    limits = flag_checked(Limits, changed, {key: "--cap-" + key.replace("_", "-") for key in caps})
    return settings.model_copy(update={"limits": limits})


def serve(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8000,
    api_key: ApiKeyOpt = None,
    max_crawls: MaxCrawlsOpt = 4,
    max_body_bytes: MaxBodyOpt = DEFAULT_MAX_BODY_BYTES,
    read_timeout: ReadTimeoutOpt = DEFAULT_LIMITS.read_timeout,
    max_connections: MaxConnectionsOpt = DEFAULT_LIMITS.max_connections,
    max_client_connections: MaxClientConnectionsOpt = DEFAULT_LIMITS.per_client,
    allowed_host: AllowedHostOpt = None,
    cors_origin: CorsOriginOpt = None,
    cap_max_pages: CapPagesOpt = None,
    cap_max_depth: CapDepthOpt = None,
    delay: RemoteDelayOpt = DEFAULT_DELAY,
    allow_render: AllowRenderOpt = False,
    workers: WorkersOpt = None,
    db: DbOpt = None,
    allow_private: AllowPrivateOpt = None,
    resolve: ResolveOpt = None,
    user_agent: UserAgentOpt = None,
    config: ConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Serve the REST API (/api/v1, /openapi.json) and the web UI (/) on HOST:PORT."""
    check_bind(host, api_key)
    remote = _remote(delay, allow_render)
    settings = _settings(
        config=config,
        db=db,
        user_agent=user_agent,
        allow_private=allow_private,
        resolve=resolve,
        cap_max_pages=cap_max_pages,
        cap_max_depth=cap_max_depth,
        workers=workers,
    )
    setup_logging(debug, progress=False)
    api = _need("sitelore.server.api", "api")
    hosts = _hosts(host, settings, allowed_host, cors_origin)
    limits = _limits(read_timeout, max_connections, max_client_connections)

    async def go() -> None:
        from sitelore.app.bootstrap import Runtime

        async with Runtime(settings) as runtime:
            app = api.create_app(
                runtime,
                api_key=api_key,
                max_body_bytes=max_body_bytes,
                max_active_crawls=max_crawls,
                remote=remote,
                hosts=hosts,
            )
            async with running_server(
                app,
                host=host,
                port=port,
                stop_on_signals=True,
                limits=limits,
                on_stop=api.stopper(app),
            ) as served:
                err_console.print(f"sitelore API on {served.url}  (description: /openapi.json)")
                err_console.print(f"web UI on {served.url}/")
                await served.wait()

    run_async(go())


def mcp(
    transport: Annotated[
        str, typer.Option("--transport", help="stdio, or http (streamable HTTP at /mcp).")
    ] = "stdio",
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (http).")] = 8765,
    api_key: ApiKeyOpt = None,
    max_body_bytes: MaxBodyOpt = DEFAULT_MAX_BODY_BYTES,
    read_timeout: ReadTimeoutOpt = DEFAULT_LIMITS.read_timeout,
    max_connections: MaxConnectionsOpt = DEFAULT_LIMITS.max_connections,
    max_client_connections: MaxClientConnectionsOpt = DEFAULT_LIMITS.per_client,
    allowed_host: AllowedHostOpt = None,
    cors_origin: CorsOriginOpt = None,
    cap_max_pages: CapPagesOpt = None,
    cap_max_depth: CapDepthOpt = None,
    delay: RemoteDelayOpt = DEFAULT_DELAY,
    allow_render: AllowRenderOpt = False,
    workers: WorkersOpt = None,
    db: DbOpt = None,
    allow_private: AllowPrivateOpt = None,
    resolve: ResolveOpt = None,
    user_agent: UserAgentOpt = None,
    config: ConfigOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Serve the MCP tools (submit-document, search-documents, get-document, list-documents)."""
    if transport not in ("stdio", "http"):
        raise UsageError(f"--transport {transport}: use stdio or http")
    if transport == "http":
        check_bind(host, api_key)
    remote = _remote(delay, allow_render)
    settings = _settings(
        config=config,
        db=db,
        user_agent=user_agent,
        allow_private=allow_private,
        resolve=resolve,
        cap_max_pages=cap_max_pages,
        cap_max_depth=cap_max_depth,
        workers=workers,
    )
    # stdout carries the protocol over stdio: logs go to stderr, quietly.
    setup_logging(debug, progress=transport == "stdio")
    mcp_server = _need("sitelore.server.mcp_server", "mcp")
    hosts = _hosts(host, settings, allowed_host, cors_origin)
    limits = _limits(read_timeout, max_connections, max_client_connections)

    async def go() -> None:
        from sitelore.app.bootstrap import Runtime

        async with Runtime(settings) as runtime:
            if transport == "stdio":
                await mcp_server.run_stdio(runtime, remote=remote)
                return
            app = mcp_server.http_app(
                runtime,
                host=host,
                api_key=api_key,
                max_body_bytes=max_body_bytes,
                remote=remote,
                hosts=hosts,
            )
            async with running_server(
                app, host=host, port=port, stop_on_signals=True, limits=limits
            ) as served:
                err_console.print(f"sitelore MCP on {served.url}/mcp")
                await served.wait()

    run_async(go())


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``mcp`` to the ``sitelore`` command."""
    app.command(name="serve")(serve)
    app.command(name="mcp")(mcp)
