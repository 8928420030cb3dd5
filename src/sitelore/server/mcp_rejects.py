"""Answer the malformed MCP messages that the SDK's transports drop or answer without their id.

mcp 2.x's stdio transport hands a line that is not JSON, or not a JSON-RPC message, to
the session as an exception, which drops it: a client that sent it with an id waits
forever. Its streamable HTTP transport answers such a body, but with ``id: null`` and
``-32602``, and takes a message whose id is an object for a notification (202, no
answer). Both are wrapped here, not replaced: :func:`serve_stdio` reads stdin itself
and passes every valid line to the SDK's transport unchanged; :class:`RejectMalformed`
(ASGI) does the same for POST bodies. The others are answered as JSON-RPC 2.0 says:
``-32700`` Parse error (id null) for text that is not JSON or is nested deeper than
the parser goes (it raised ``RecursionError``, which ended the stdio server and was a
500 over HTTP), ``-32600`` Invalid Request
for the rest, with the request's id when one can be read (else null). Blank stdio
lines are skipped. Valid messages are the SDK's to answer (unknown methods and bad
params get their errors there).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from sitelore.server.asgi_guard import ASGIApp, Message, Receive, Scope, Send, send_json

__all__ = ["RejectMalformed", "rejection", "serve_stdio"]


def _error(code: int, message: str, request_id: types.RequestId | None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def rejection(line: str) -> types.JSONRPCError | None:
    """The error answer for a line that is not a JSON-RPC message; None for a valid one.

    A line with an ``id`` that is no valid id (an object, a fraction, a boolean) is no
    notification either, though the SDK would read it as one and never answer.
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        message = None
    try:
        data: Any = json.loads(line)
    except ValueError:
        return _error(types.PARSE_ERROR, "Parse error: not JSON", None)
    except RecursionError:  # arrays or objects nested deeper than the parser goes
        return _error(types.PARSE_ERROR, "Parse error: JSON nested too deeply", None)
    has_id = isinstance(data, dict) and "id" in data
    if message is not None and not (isinstance(message, types.JSONRPCNotification) and has_id):
        return None
    request_id = data.get("id") if has_id else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return _error(types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", request_id)


async def _checked(
    lines: AsyncIterable[str], rejected: MemoryObjectSendStream[types.JSONRPCError]
) -> AsyncIterator[str]:
    """The valid lines of ``lines``; the answers to the others go to ``rejected``."""
    async with rejected:
        async for line in lines:
            if not line.strip():
                continue
            error = rejection(line)
            if error is None:
                yield line
            else:
                await rejected.send(error)


async def _answer(
    rejected: MemoryObjectReceiveStream[types.JSONRPCError],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with rejected:
        async for error in rejected:
            await write_stream.send(SessionMessage(error))


async def serve_stdio(server: Server[Any]) -> None:
    """Run ``server`` over this process's stdin and stdout until the client hangs up."""
    # A duplicate of fd 0, so closing this reader never closes the process's stdin.
    binary = os.fdopen(os.dup(0), "rb")
    stdin = anyio.wrap_file(io.TextIOWrapper(binary, encoding="utf-8", errors="replace"))
    send_rejected, receive_rejected = anyio.create_memory_object_stream[types.JSONRPCError](16)
    # stdio_server only iterates over its stdin, line by line, which _checked does too.
    lines = cast("anyio.AsyncFile[str]", _checked(stdin, send_rejected))
    try:
        async with (
            stdio_server(stdin=lines) as (read_stream, write_stream),
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(_answer, receive_rejected, write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()
    finally:
        await stdin.aclose()


class RejectMalformed:
    """ASGI middleware: a POST body that is not a JSON-RPC message gets its error (400).

    Valid bodies reach the app unchanged (read once, replayed). Put it inside the body
    cap: a body over the cap ends in a disconnect, and the app is not called.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one POST body; every other request passes straight through."""
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left, or the body cap answered
            chunks.append(message.get("body", b""))
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        error = rejection(body.decode("utf-8", errors="replace"))
        if error is not None:
            payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await send_json(send, 400, payload)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
