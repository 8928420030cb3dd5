"""The Host and Origin rules of HostPolicy, as tables of (bind, header, decision)."""

from __future__ import annotations

import pytest

from sitelore.server.host_guard import HostPolicy, host_address


@pytest.mark.parametrize(
    ("bind", "host", "ok"),
    [
        # Every spelling of a loopback address or name, on a loopback bind.
        ("127.0.0.1", "127.0.0.1:8000", True),
        ("127.0.0.1", "127.0.0.2:8000", True),
        ("127.0.0.1", "127.1:8000", True),
        ("127.0.0.1", "2130706433", True),
        ("127.0.0.1", "0x7f.0.0.1", True),
        ("127.0.0.1", "[::1]:8000", True),
        ("127.0.0.1", "[0:0:0:0:0:0:0:1]", True),
        ("127.0.0.1", "[::ffff:127.0.0.1]:80", True),
        ("127.0.0.1", "localhost:8000", True),
        ("127.0.0.1", "LOCALHOST.:8000", True),
        ("127.0.0.1", "app.localhost:8000", True),
        ("127.0.0.2", "127.0.0.2:8765", True),
        ("::1", "[::1]:8000", True),
        ("localhost", "localhost", True),
        # Names that could be rebound, and other addresses, on a loopback bind.
        ("127.0.0.1", "evil.example:8000", False),
        ("127.0.0.2", "evil.example", False),
        ("::1", "evil.example:8000", False),
        ("127.0.0.1", "localhost.evil.example", False),
        ("127.0.0.1", "192.168.1.5:8000", False),
        ("127.0.0.1", "", False),
        ("127.0.0.1", None, False),
        # A port that is no port: the host before it is not what the client named.
        ("127.0.0.1", "127.0.0.1:8000@evil.example", False),
        ("127.0.0.1", "[::1]evil.example", False),
        ("127.0.0.1", "localhost:\uff18\uff10", False),  # full-width digits
        ("127.0.0.1", "127.0.0.1:", True),
        # A specific non-loopback bind: its own address only (and listed names).
        ("192.0.2.7", "192.0.2.7:8000", True),
        ("192.0.2.7", "127.0.0.1:8000", False),
        ("192.0.2.7", "docs.internal:8000", False),
        # A wildcard bind: any address literal, loopback names, never an unlisted name.
        ("0.0.0.0", "192.0.2.7:8000", True),
        ("0.0.0.0", "[2001:db8::1]:8000", True),
        ("0.0.0.0", "localhost:8000", True),
        ("0.0.0.0", "docs.internal:8000", False),
    ],
)
def test_host_rule(bind: str, host: str | None, ok: bool) -> None:
    """A Host passes when it names the bind, a loopback (on a local bind) or an address."""
    assert HostPolicy(bind).host_ok(host) is ok


@pytest.mark.parametrize(
    ("allowed", "host", "ok"),
    [
        (("docs.internal",), "docs.internal:8000", True),
        (("Docs.Internal.",), "docs.internal", True),
        (("docs.internal",), "evil.example", False),
        (("*",), "anything.example:1", True),
    ],
)
def test_listed_hosts(allowed: tuple[str, ...], host: str, ok: bool) -> None:
    """--allowed-host adds names (case and a trailing dot ignored); * allows every host."""
    assert HostPolicy("127.0.0.1", allowed_hosts=allowed).host_ok(host) is ok


@pytest.mark.parametrize(
    ("origin", "host", "ok"),
    [
        (None, "127.0.0.1:8000", True),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
        ("http://localhost:8000", "LOCALHOST:8000", True),
        ("http://[::1]:8000", "[::1]:8000", True),
        ("http://example.org", "example.org:80", True),
        ("https://example.org", "example.org", True),
        ("http://evil.example:8000", "127.0.0.1:8000", False),
        ("http://127.0.0.1:9999", "127.0.0.1:8000", False),
        ("http://localhost:8000", "127.0.0.1:8000", False),
        ("null", "127.0.0.1:8000", False),
        ("file://", "127.0.0.1:8000", False),
        ("https://app.example", "127.0.0.1:8000", True),  # listed below
    ],
)
def test_origin_rule(origin: str | None, host: str, ok: bool) -> None:
    """An Origin passes when absent, the origin of the Host asked for, or listed."""
    policy = HostPolicy("127.0.0.1", cors_origins=("https://app.example",))
    assert policy.origin_ok(origin, host) is ok


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("10.1", "10.0.0.1"),
        ("evil.example", None),
        ("0xfoo", None),
        ("", None),
    ],
)
def test_host_address_reads_every_spelling(text: str, address: str | None) -> None:
    """Legacy IPv4 spellings are addresses; names are not."""
    found = host_address(text)
    assert (None if found is None else str(found)) == address
