"""Hold slow and greedy clients off a uvicorn server: a read deadline, connections per address.

uvicorn times out idle keep-alive connections but not a request whose headers or body
never finish, so a few hundred half-open connections fill ``limit_concurrency`` and
every other request gets 503. :func:`guarded_h11` returns uvicorn's own h11 protocol
with two additions (chosen over switching servers or an asyncio proxy in front: the
protocol class is uvicorn's documented ``http=`` hook, and the rest of uvicorn stays):

* **read deadline**: a request's headers and body must have arrived ``read_timeout``
  seconds after the connection opened or the previous response ended; else the
  connection is closed (the app, if it was reading the body, sees a disconnect).
  Once the request is in, the deadline is off: long answers (SSE, crawls) are not cut.
* **per-address cap**: a client address with ``per_client`` connections open has
  any further one closed at once, so one address cannot take every connection slot.

The total cap stays uvicorn's ``limit_concurrency`` (503 beyond it).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from sitelore.server.asgi_guard import DEFAULT_LIMITS, ConnectionLimits

__all__ = ["guarded_h11"]


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a read deadline and a per-address cap."""

    read_timeout: float = DEFAULT_LIMITS.read_timeout
    per_client: int = DEFAULT_LIMITS.per_client

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else None
        same = sum(1 for other in self.connections if _address_of(other) == address)
        if address is not None and same > self.per_client:
            transport.abort()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # the whole request is in (or the connection is ending)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def _address_of(protocol: object) -> str | None:
    client = getattr(protocol, "client", None)
    return client[0] if client else None


def guarded_h11(limits: ConnectionLimits = DEFAULT_LIMITS) -> type[H11Protocol]:
    """uvicorn's h11 protocol class held to ``limits`` (pass as ``uvicorn.Config(http=...)``)."""
    return type(
        "GuardedH11",
        (_GuardedH11,),
        {"read_timeout": limits.read_timeout, "per_client": limits.per_client},
    )
