"""The web UI's gate: security headers, the CSRF cookie, and the login cookie for the API key.

Plain ASGI, wrapped around the whole app but acting only on UI paths (everything
outside ``/api/``, the Firecrawl-compatible ``/v2/``, ``/healthz`` and ``/openapi.json``,
which pass untouched):

* every UI answer carries a strict Content-Security-Policy (scripts and styles only
  from this server, nothing inline, no framing) and its companions;
* every UI visitor gets a random CSRF token in an HttpOnly, SameSite=Strict cookie;
  forms echo it in a hidden field and :func:`csrf_ok` compares the two;
* with an API key, a request without ``Authorization`` needs the session cookie the
  login form sets (an HMAC of the key, never the key itself); the gate then hands the
  inner app the bearer credential, so the API's own guard stays the one judge. Without
  the cookie a page request is sent to ``/login``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie
from urllib.parse import quote

from sitelore.server.asgi_guard import ASGIApp, Message, Receive, Scope, Send, header

__all__ = [
    "CSP",
    "CSRF_COOKIE",
    "CSRF_SCOPE_KEY",
    "SESSION_COOKIE",
    "UIGate",
    "cookie_header",
    "csrf_ok",
    "is_ui_path",
    "session_value",
]

CSRF_COOKIE = "sitelore_csrf"
SESSION_COOKIE = "sitelore_session"
#: Where the gate leaves the visitor's CSRF token for the pages (``request.scope``).
CSRF_SCOPE_KEY = "sitelore.csrf"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # Not "no-referrer": under it a browser sends ``Origin: null`` with the UI's own form
    # posts, which the Host/Origin guard must refuse. Crawled sites still get no referrer.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
_API_PATHS = ("/healthz", "/openapi.json")
#: Machine routes: the REST API and the Firecrawl-compatible API.
_API_PREFIXES = ("/api/", "/v2/")
#: UI paths a visitor reaches before logging in.
_OPEN_UI = ("/login", "/static/")


def is_ui_path(path: str) -> bool:
    """True for the web UI's paths: all but the machine routes'."""
    return not (path.startswith(_API_PREFIXES) or path == "/api" or path in _API_PATHS)


def session_value(api_key: str) -> str:
    """The login cookie's value for ``api_key``: an HMAC, so the cookie never holds the key."""
    return hmac.new(api_key.encode(), b"sitelore-web-session", hashlib.sha256).hexdigest()


def cookie_header(name: str, value: str, *, max_age: int | None = None) -> str:
    """A ``Set-Cookie`` value: HttpOnly, SameSite=Strict, whole site."""
    age = f"; Max-Age={max_age}" if max_age is not None else ""
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict{age}"


def csrf_ok(scope: Mapping[str, object], submitted: str | None) -> bool:
    """True when a form's token matches the visitor's CSRF cookie."""
    expected = scope.get(CSRF_SCOPE_KEY)
    return (
        isinstance(expected, str)
        and submitted is not None
        and hmac.compare_digest(expected.encode(), submitted.encode())
    )


def _cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for key, value in scope.get("headers", ()):
        if key.lower() == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header is just no cookie
                return {}
    return {name: morsel.value for name, morsel in jar.items()}


class UIGate:
    """ASGI middleware for the web UI's paths (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, api_key: str | None = None) -> None:
        self.app = app
        self._key = api_key
        self._session = session_value(api_key) if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection; non-UI paths and non-HTTP scopes pass through."""
        if scope["type"] != "http" or not is_ui_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        cookies = _cookies(scope)
        token = cookies.get(CSRF_COOKIE, "")
        extra = list(_HEADERS)
        if len(token) < 32 or not token.isalnum():  # none yet, or not one of ours: a new one
            token = secrets.token_hex(32)
            extra.append((b"set-cookie", cookie_header(CSRF_COOKIE, token).encode()))
        scope = {**scope, CSRF_SCOPE_KEY: token}
        headed = _with_headers(send, extra)
        if self._key is not None and header(scope, b"authorization") is None:
            path = scope.get("path", "")
            signed_in = self._session is not None and hmac.compare_digest(
                cookies.get(SESSION_COOKIE, "").encode(), self._session.encode()
            )
            if not signed_in and not path.startswith(_OPEN_UI):
                await _to_login(headed, path)
                return
            bearer = (b"authorization", b"Bearer " + self._key.encode())
            scope["headers"] = [*scope.get("headers", ()), bearer]
        await self.app(scope, receive, headed)


def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    async def headed(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return headed


async def _to_login(send: Send, path: str) -> None:
    location = "/login?next=" + quote(path, safe="/")
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})
