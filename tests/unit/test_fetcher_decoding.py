"""The fetcher's bounded inflaters, fed in awkward pieces (no network)."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

import pytest

from sitelore.adapters.fetcher import _decode, _decoders
from sitelore.core.errors import UnsupportedContentTypeError

PAYLOAD = b"<p>" + bytes(range(256)) * 300 + b"hello " * 20_000 + b"</p>"


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _inflate(encoding: str, body: bytes, step: int) -> bytes:
    stages = _decoders([encoding], "http://docs.test/")
    out = bytearray()
    for start in range(0, len(body), step):
        for piece in _decode(stages, body[start : start + step]):
            assert len(piece) <= 64 * 1024
            out += piece
    return bytes(out)


@pytest.mark.parametrize("step", [1, 2, 3, 1000, 1 << 20])
@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", _raw_deflate),
        ("gzip, deflate", lambda data: zlib.compress(gzip.compress(data))),
        ("gzip", lambda data: gzip.compress(data[:1000]) + gzip.compress(data[1000:])),
        ("gzip", lambda data: gzip.compress(data) + b"\0\0\0"),
    ],
)
def test_inflates_whatever_the_piece_size(
    encoding: str, encode: Callable[[bytes], bytes], step: int
) -> None:
    """Streams split anywhere (even inside headers and between members) inflate whole."""
    assert _inflate(encoding, encode(PAYLOAD), step) == PAYLOAD


def test_gzip_member_count_is_capped() -> None:
    """Thousands of tiny gzip members are refused instead of costing quadratic time."""
    body = gzip.compress(b"x") * 1000
    with pytest.raises(zlib.error, match="members"):
        _inflate("gzip", body, 1 << 20)


@pytest.mark.parametrize("values", [["br"], ["gzip, gzip, gzip"], ["gzip", "gzip", "deflate"]])
def test_unsupported_or_long_chains_refused(values: list[str]) -> None:
    with pytest.raises(UnsupportedContentTypeError):
        _decoders(values, "http://docs.test/")


def test_identity_and_repeated_headers() -> None:
    """identity is skipped; repeated Content-Encoding headers count as one chain."""
    assert len(_decoders(["identity", "gzip", " Deflate "], "http://docs.test/")) == 2
