"""The ASGI guard: loopback detection, the bind rule, bearer auth and the body cap."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from sitelore.core.errors import ConfigError
from sitelore.server.asgi_guard import RequestGuard, check_bind, is_loopback

KEY = "0123456789abcdef"


class TestIsLoopback:
    @pytest.mark.parametrize(
        "host",
        ["127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LocalHost", "::ffff:127.0.0.1"],
    )
    def test_loopback_hosts(self, host: str) -> None:
        """Loopback addresses and the name localhost count as loopback."""
        assert is_loopback(host)

    @pytest.mark.parametrize(
        "host",
        ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "", "localhost.example"],
    )
    def test_everything_else(self, host: str) -> None:
        """Wildcards, private and public addresses and other names are not loopback."""
        assert not is_loopback(host)


def accepted(host: str, api_key: str | None) -> bool:
    """The bind rule's decision as a value: True when ``check_bind`` lets it serve."""
    try:
        check_bind(host, api_key)
    except ConfigError:
        return False
    return True


class TestCheckBind:
    @pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
    def test_loopback_needs_no_key(self, host: str) -> None:
        """Loopback without a key is accepted, while the wildcard without one is refused.

        The pair proves the decision is made on the host: the same call with a host
        beyond loopback raises.
        """
        assert accepted(host, None) is True
        assert accepted("0.0.0.0", None) is False

    def test_wildcard_without_key_is_refused_naming_the_fix(self) -> None:
        """0.0.0.0 without a key is a ConfigError naming the host and the env variable."""
        with pytest.raises(ConfigError, match=r"--host 0\.0\.0\.0: .*SITELORE_API_KEY"):
            check_bind("0.0.0.0", None)

    @pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
    def test_wildcard_with_a_key_is_allowed(self, host: str) -> None:
        """A host refused without a key is accepted once a key of full length is set."""
        assert accepted(host, None) is False
        assert accepted(host, KEY) is True
        assert accepted(host, KEY[:-1]) is False  # one character short of the minimum

    def test_short_key_is_refused_without_echoing_it(self) -> None:
        """A key under 16 characters is refused even on loopback; the key is not shown."""
        with pytest.raises(ConfigError, match="too short") as info:
            check_bind("127.0.0.1", "secret")
        assert "secret" not in str(info.value)


class Recorder:
    """An ASGI app that reads the whole body and answers 200 with its length."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})


async def call(
    guard: RequestGuard,
    *,
    path: str = "/api",
    headers: dict[str, str] | None = None,
    chunks: tuple[bytes, ...] = (b"",),
) -> tuple[int, dict[str, str], bytes]:
    """Run one HTTP request through the guard; return status, headers and body."""
    scope = {
        "type": "http",
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


class TestRequestGuard:
    async def test_without_a_key_everything_passes(self) -> None:
        """No key configured: requests reach the app."""
        app = Recorder()
        status, _, _ = await call(RequestGuard(app))
        assert (status, app.calls) == (200, 1)

    @pytest.mark.parametrize(
        "authorization",
        [None, "", f"Basic {KEY}", "Bearer", f"Bearer {KEY}x", f"Bearer {KEY[:-1]}"],
    )
    async def test_missing_or_wrong_token_is_401_and_never_reaches_the_app(
        self, authorization: str | None
    ) -> None:
        """A missing, malformed or wrong token is answered 401 by the guard itself."""
        app = Recorder()
        headers = {} if authorization is None else {"authorization": authorization}
        status, sent_headers, body = await call(RequestGuard(app, api_key=KEY), headers=headers)
        assert status == 401
        assert sent_headers["www-authenticate"] == "Bearer"
        assert json.loads(body)["error"]["code"] == "unauthorized"
        assert app.calls == 0

    async def test_right_token_and_open_paths_pass(self) -> None:
        """The right bearer token (any scheme case) passes; open paths need none."""
        app = Recorder()
        guard = RequestGuard(app, api_key=KEY, open_paths=("/healthz",))
        ok, _, _ = await call(guard, headers={"authorization": f"bearer {KEY}"})
        health, _, _ = await call(guard, path="/healthz")
        assert (ok, health, app.calls) == (200, 200, 2)

    async def test_declared_length_over_the_cap_is_413(self) -> None:
        """A Content-Length above the cap is refused before the app runs."""
        app = Recorder()
        status, _, body = await call(
            RequestGuard(app, max_body_bytes=1024), headers={"content-length": "1025"}
        )
        assert status == 413
        assert json.loads(body)["error"]["code"] == "too-large"
        assert app.calls == 0

    async def test_streamed_body_over_the_cap_is_413_and_the_app_sees_a_disconnect(self) -> None:
        """A chunked body passing the cap mid-stream is 413; the app's own answer is dropped."""
        app = Recorder()
        status, _, body = await call(
            RequestGuard(app, max_body_bytes=1024), chunks=(b"a" * 600, b"b" * 600, b"c" * 600)
        )
        assert status == 413
        assert json.loads(body)["error"]["code"] == "too-large"
        assert app.calls == 1

    async def test_body_at_the_cap_passes(self) -> None:
        """Exactly the cap is allowed."""
        app = Recorder()
        status, _, body = await call(RequestGuard(app, max_body_bytes=1024), chunks=(b"a" * 1024,))
        assert (status, body) == (200, b"1024")
