"""Which lines the MCP wrapper answers itself, and with which JSON-RPC error."""

from __future__ import annotations

import pytest

from sitelore.server.mcp_rejects import rejection

PARSE, INVALID = -32700, -32600


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("not json", PARSE, None),
        ('{"jsonrpc":"2.0","id":1,"method":"ping"', PARSE, None),
        ('{"jsonrpc":"2.0","id":2}', INVALID, 2),
        ('{"jsonrpc":"1.0","id":"x","method":"ping"}', INVALID, "x"),
        ('{"id":4,"method":"ping"}', INVALID, 4),
        ('{"jsonrpc":"2.0","id":5,"method":7}', INVALID, 5),
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', INVALID, 7),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID, None),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID, None),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID, None),
        ("[1, 2]", INVALID, None),
        ('"just a string"', INVALID, None),
        ("[" * 100_000 + "]" * 100_000, PARSE, None),
        ('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + "[" * 50_000, PARSE, None),
        (
            '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":' + "[" * 400 + "]" * 400 + "}}",
            INVALID,
            3,
        ),
    ],
)
def test_malformed_lines_get_their_error(line: str, code: int, request_id: object) -> None:
    """Not JSON: parse error, id null; not JSON-RPC: invalid request with its id if valid."""
    error = rejection(line)
    assert error is not None
    assert error.error.code == code
    assert error.id == request_id


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":3,"result":{}}',
        '{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}',
        '{"jsonrpc":"2.0","id":9,"method":"no/such/method"}',
    ],
)
def test_valid_messages_are_left_to_the_sdk(line: str) -> None:
    """Requests, notifications and responses pass (unknown methods are the SDK's to answer)."""
    assert rejection(line) is None
