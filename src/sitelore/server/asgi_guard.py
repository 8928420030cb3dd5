"""Guard a served ASGI app: bearer-token auth, a request body cap, and loopback-only binding.

Plain ASGI with no framework import, so the REST API and the MCP HTTP transport are
wrapped the same way. The answers it gives itself (401, 413) have the service error
shape ``{"error": {"code", "message", "field"}}``. It never logs or echoes a token.
"""

from __future__ import annotations

import dataclasses
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from sitelore.core.errors import ConfigError

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BODY_BYTES",
    "MIN_KEY_LENGTH",
    "ASGIApp",
    "ConnectionLimits",
    "Message",
    "Receive",
    "RequestGuard",
    "Scope",
    "Send",
    "answer",
    "check_bind",
    "header",
    "is_loopback",
    "send_json",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: Any ASGI application.
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Request bodies above this many bytes are refused (413) unless the operator says otherwise.
DEFAULT_MAX_BODY_BYTES = 64 * 1024
#: The shortest API key accepted: shorter ones are guessable.
MIN_KEY_LENGTH = 16


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """How long a request may take to arrive, and how many connections a server allows.

    Enforced by the server (``serve_limits``), not by this middleware.
    """

    #: Seconds for a request's headers and body to arrive.
    read_timeout: float = 10.0
    #: Connections open at once (more get 503).
    max_connections: int = 200
    #: Connections open at once from one client address (more are closed at once).
    per_client: int = 32


DEFAULT_LIMITS = ConnectionLimits()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1), nothing else."""
    text = host.strip().strip("[]").lower()
    if text == "localhost":
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def check_bind(host: str, api_key: str | None) -> None:
    """Refuse to serve beyond loopback without an API key, or with a guessable key.

    Raises:
        ConfigError: ``host`` is not loopback and no key is set, or the key is too short.
    """
    if api_key is not None and len(api_key) < MIN_KEY_LENGTH:
        raise ConfigError(
            f"API key: too short ({len(api_key)} characters); use at least {MIN_KEY_LENGTH}"
        )
    if not api_key and not is_loopback(host):
        raise ConfigError(
            f"--host {host}: refusing to listen beyond loopback without an API key; "
            "set --api-key or SITELORE_API_KEY, or bind 127.0.0.1"
        )


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a request header (``name`` in lower case), or None."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


async def answer(send: Send, status: int, code: str, message: str, **headers: str) -> None:
    """Send a whole JSON error answer in the service shape."""
    body = json.dumps({"error": {"code": code, "message": message, "field": None}}).encode()
    await send_json(send, status, body, **headers)


async def send_json(send: Send, status: int, body: bytes, **headers: str) -> None:
    """Send a whole answer of JSON ``body`` (``headers``: names with ``_`` for ``-``)."""
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """ASGI middleware: check the bearer token, then cap the request body.

    Args:
        app: the app to guard.
        api_key: when set, every HTTP request outside ``open_paths`` must carry
            ``Authorization: Bearer <api_key>`` (else 401).
        max_body_bytes: a body over this (declared or streamed) is answered 413.
        open_paths: paths served without a token (health checks, the API description).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        open_paths: Collection[str] = (),
    ) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None
        self._max = max_body_bytes
        self._open = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection: lifespan and websockets pass straight through."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._authorized(scope):
            await answer(
                send,
                401,
                "unauthorized",
                "missing or wrong API key: send 'Authorization: Bearer <key>'",
                www_authenticate="Bearer",
            )
            return
        declared = header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self._max):
            await self._too_large(send)
            return
        await self._call_capped(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        if self._key is None or scope.get("path") in self._open:
            return True
        value = header(scope, b"authorization") or b""
        scheme, _, token = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._key)

    async def _too_large(self, send: Send) -> None:
        await answer(send, 413, "too-large", f"request body over {self._max} bytes")

    async def _call_capped(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app, answering 413 as soon as a streamed body passes the cap.

        After that answer the app sees a disconnect and whatever it sends is dropped.
        """
        received = 0
        answered = started = False

        async def capped_receive() -> Message:
            nonlocal received, answered
            if answered:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self._max:
                    answered = True
                    if not started:
                        await self._too_large(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if not answered:
                started = True
                await send(message)

        await self.app(scope, capped_receive, guarded_send)
