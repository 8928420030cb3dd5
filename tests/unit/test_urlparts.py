"""IPv4 hosts in their spellings: dotted decimal is its own form, other spellings convert."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.core.urlparts import ipv4_from_host

octets = st.lists(st.integers(min_value=0, max_value=255), min_size=4, max_size=4)


@given(octets)
def test_dotted_decimal_is_read_as_itself(parts: list[int]) -> None:
    """A plain dotted-decimal host (a trailing dot ignored) is that address."""
    dotted = ".".join(map(str, parts))
    assert ipv4_from_host(dotted) == ipv4_from_host(dotted + ".") == dotted
    assert dotted == str(ipaddress.IPv4Address(dotted))


@given(octets)
def test_leading_zeros_are_still_octal(parts: list[int]) -> None:
    """A part with a leading zero is octal, however close to dotted decimal it looks."""
    spelled = ".".join(f"0{part:o}" for part in parts)
    assert ipv4_from_host(spelled) == ".".join(map(str, parts))


@pytest.mark.parametrize(
    ("host", "expected"),
    [("0x7f.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("docs.example.com", None)],
)
def test_other_spellings(host: str, expected: str | None) -> None:
    """Hex, shorthand and numeric forms convert; a name is no address."""
    assert ipv4_from_host(host) == expected


def test_out_of_range_is_refused() -> None:
    """A number past 255 in a dotted part is not an address."""
    with pytest.raises(ValueError, match="out of range"):
        ipv4_from_host("256.0.0.1")
