"""The service gate of the scale tests: skip without PostgreSQL/Redis, fail under CI=true."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from tests import scale_support
from tests.scale_support import require_service


@pytest.fixture(autouse=True)
def _fresh_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test probes afresh (the real cache lives for the whole session)."""
    monkeypatch.setattr(scale_support, "_PROBED", {})
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture
def pong_port() -> Iterator[int]:
    """A loopback port whose server answers every connection with ``+PONG``."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(10)
        connections: list[int] = []

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(64)
                conn.sendall(b"+PONG\r\n")
                connections.append(1)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        yield int(server.getsockname()[1])
        thread.join(10)
        assert connections == [1]  # probed once, whatever the number of asks


def test_an_unreachable_service_skips_the_test_naming_it(dead_port: int) -> None:
    with pytest.raises(
        pytest.skip.Exception, match=rf"Redis is not reachable at 127\.0\.0\.1:{dead_port}"
    ):
        require_service("Redis", "127.0.0.1", dead_port, b"PING\r\n", (b"+PONG",))


@pytest.mark.parametrize("value", ["true", "TRUE", " true "])
def test_under_ci_an_unreachable_service_fails_the_test(
    dead_port: int, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI must provide PostgreSQL"):
        require_service("PostgreSQL", "127.0.0.1", dead_port, b"x", (b"S",))


@pytest.mark.parametrize("value", ["", "false", "1", "yes"])
def test_ci_other_than_true_still_skips(
    dead_port: int, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception):
        require_service("Redis", "127.0.0.1", dead_port, b"PING\r\n", (b"+PONG",))


def test_a_service_that_answers_lets_the_test_run_and_is_probed_once(pong_port: int) -> None:
    for _ in range(3):
        require_service("Redis", "127.0.0.1", pong_port, b"PING\r\n", (b"+PONG",))


def test_something_else_on_the_port_is_not_the_service(pong_port: int) -> None:
    """A listener that answers the wrong protocol counts as unreachable, with what it said."""
    with pytest.raises(pytest.skip.Exception, match=r"unexpected answer b'\+PONG"):
        require_service("PostgreSQL", "127.0.0.1", pong_port, b"x", (b"S", b"N"))
