"""Refuse requests meant for another site: a Host this server does not answer to, a foreign Origin.

DNS rebinding lets a web page whose name re-resolves to 127.0.0.1 talk to a local
server: the browser then sends that page's name as ``Host`` and its origin as
``Origin``. :class:`HostGuard` (plain ASGI, wrapped around every HTTP surface) answers

* **421** when ``Host`` names none of the hosts of :class:`HostPolicy`: the bound
  address, every loopback address (any spelling of 127.0.0.0/8, ``::1``, ``localhost``
  and ``*.localhost``) when the bind is loopback or a wildcard, any IP literal on a
  wildcard bind (an address cannot be rebound), and the names the operator lists
  (``--allowed-host``; ``*`` allows every host, for a proxy that checks them itself);
* **403** when a browser's ``Origin`` is neither this server's own (the origin of the
  ``Host`` it asked for) nor one the operator lists (``--cors-origin``). Requests
  without ``Origin`` (curl, SDKs, same-origin GETs) pass.

No framework import, so the REST API and MCP's streamable HTTP share it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from collections.abc import Collection
from urllib.parse import urlsplit

from sitelore.server.asgi_guard import ASGIApp, Receive, Scope, Send, answer, header, is_loopback

__all__ = ["HostGuard", "HostPolicy", "host_address"]

_WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names a wildcard bind, binds nothing


def host_address(hostname: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a Host names in any spelling (``127.1``, ``0x7f.0.0.1``, ``[::1]``).

    An IPv4-mapped IPv6 address is its IPv4 address.
    """
    text = hostname.strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        pass
    else:
        mapped = getattr(address, "ipv4_mapped", None)
        return mapped if mapped is not None else address
    # The legacy IPv4 forms curl and inet_aton accept; names with letters are no address.
    if not text or any(ch not in "0123456789abcdefx." for ch in text.lower()):
        return None
    if not text[0].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _split_host(value: str) -> tuple[str, str]:
    """``host[:port]`` -> (lower-case host without a trailing dot, port or "")."""
    text = value.strip().lower()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    return host.rstrip("."), port


def _is_local_name(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


@dataclasses.dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` values a server bound to ``bind`` answers.

    Args:
        bind: the address the server listens on.
        allowed_hosts: more host names (or ``*``) the operator serves under.
        cors_origins: browser origins (``https://app.example``) allowed besides the
            server's own; the only ones CORS answers.
    """

    bind: str
    allowed_hosts: Collection[str] = ()
    cors_origins: Collection[str] = ()

    def host_ok(self, value: str | None) -> bool:
        """True when the ``Host`` header names this server."""
        if value is None:
            return False
        host, port = _split_host(value)
        if port and not (port.isascii() and port.isdigit() and len(port) <= 5):
            return False  # "127.0.0.1:80@evil", "[::1]x": no Host a client means
        listed = {h.strip().lower().rstrip(".") for h in self.allowed_hosts}
        if "*" in listed or host in listed:
            return True
        bind = self.bind.strip("[]").lower()
        address = host_address(host)
        bind_address = host_address(bind)
        if host == bind or (address is not None and address == bind_address):
            return True
        local_bind = bind in _WILDCARDS or is_loopback(bind)
        if local_bind and (_is_local_name(host) or (address is not None and address.is_loopback)):
            return True
        return bind in _WILDCARDS and address is not None

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """True when a request's ``Origin`` is absent, this server's own, or listed."""
        if origin is None:
            return True
        if origin.rstrip("/") in self.cors_origins:
            return True
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or host is None:
            return False
        default = "443" if parts.scheme == "https" else "80"
        origin_host, origin_port = _split_host(parts.netloc)
        request_host, request_port = _split_host(host)
        return origin_host == request_host and (origin_port or default) == (request_port or default)


class HostGuard:
    """ASGI middleware: 421 for a foreign ``Host``, 403 for a foreign browser ``Origin``."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one HTTP request; lifespan and other scopes pass straight through."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_host = header(scope, b"host")
        host = raw_host.decode("latin-1") if raw_host is not None else None
        if not self.policy.host_ok(host):
            shown = host if host is not None else "(none)"
            await answer(
                send, 421, "misdirected", f"Host {shown!r}: not a name this server answers to"
            )
            return
        raw_origin = header(scope, b"origin")
        origin = raw_origin.decode("latin-1") if raw_origin is not None else None
        if not self.policy.origin_ok(origin, host):
            await answer(
                send, 403, "forbidden-origin", f"Origin {origin!r}: not this server's own origin"
            )
            return
        await self.app(scope, receive, send)
