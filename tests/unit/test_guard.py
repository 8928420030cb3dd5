"""The address guard as tables: URL forms, address ranges, allow lists, --resolve entries."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

import pytest

from sitelore.core.errors import BlockedURLError, ConfigError, InvalidURLError, UsageError
from sitelore.core.guard import (
    AddressPolicy,
    Target,
    check_url,
    parse_allow_entry,
    parse_resolve_entry,
    redact_url,
)
from sitelore.core.urls import normalize_url

LOOPBACK_ONLY = AddressPolicy(["127.0.0.2"])


class TestCheckUrlAccepts:
    """URLs that pass, and the normalised form the fetcher will request."""

    @pytest.mark.parametrize(
        ("url", "redacted", "host", "port", "ip"),
        [
            ("http://example.com", "http://example.com/", "example.com", 80, None),
            (
                "https://example.com/a?b=c#frag",
                "https://example.com/a?b=c",
                "example.com",
                443,
                None,
            ),
            (
                "HTTP://Example.COM:8080/Docs",
                "http://example.com:8080/Docs",
                "example.com",
                8080,
                None,
            ),
            ("http://example.com./", "http://example.com/", "example.com", 80, None),
            ("http://example.com:443/", "http://example.com:443/", "example.com", 443, None),
            ("https://example.com:443/", "https://example.com/", "example.com", 443, None),
            ("  http://example.com/  ", "http://example.com/", "example.com", 80, None),
            ("http://bücher.de/", "http://xn--bcher-kva.de/", "xn--bcher-kva.de", 80, None),
            (
                "http://example.com/a b/ä",
                "http://example.com/a%20b/%C3%A4",
                "example.com",
                80,
                None,
            ),
            ("http://example.com/%7Euser", "http://example.com/~user", "example.com", 80, None),
            ("http://docs.internal/", "http://docs.internal/", "docs.internal", 80, None),
            ("http://8.8.8.8/", "http://8.8.8.8/", "8.8.8.8", 80, "8.8.8.8"),
            ("http://134744072/", "http://8.8.8.8/", "8.8.8.8", 80, "8.8.8.8"),
            ("http://0x8.0x8.0x8.0x8/", "http://8.8.8.8/", "8.8.8.8", 80, "8.8.8.8"),
            (
                "http://[2001:4860:4860::8888]:81/",
                "http://[2001:4860:4860::8888]:81/",
                "2001:4860:4860::8888",
                81,
                "2001:4860:4860::8888",
            ),
            (
                "http://[2001:4860:4860:0:0:0:0:8888]/",
                "http://[2001:4860:4860::8888]/",
                "2001:4860:4860::8888",
                80,
                "2001:4860:4860::8888",
            ),
            (
                "http://[::ffff:8.8.8.8]/",
                "http://[::ffff:808:808]/",
                "::ffff:808:808",
                80,
                "::ffff:808:808",
            ),
        ],
    )
    def test_normalises(
        self, url: str, redacted: str, host: str, port: int, ip: str | None
    ) -> None:
        """The host is lower-case ASCII, numbers are canonical, the fragment is dropped."""
        target = check_url(url)
        assert (target.redacted, target.host, target.port, target.ip) == (redacted, host, port, ip)
        assert target.url == target.redacted

    def test_redact_url_hides_userinfo_of_anything(self) -> None:
        assert redact_url("gopher://bob:pw@[::1/x") == "gopher://***@[::1/x"
        assert redact_url("http://a.test/\n") == "http://a.test/?"

    def test_target_origin(self) -> None:
        """The origin is (scheme, host, port) with the default port filled in."""
        assert check_url("https://Example.com/x").origin == ("https", "example.com", 443)

    def test_allowed_literal_passes_with_policy(self) -> None:
        """An IP literal the operator allowed passes when the policy is given."""
        target = check_url("http://127.0.0.2:8000/", policy=LOOPBACK_ONLY)
        assert target == Target(
            scheme="http",
            host="127.0.0.2",
            port=8000,
            path="/",
            redacted="http://127.0.0.2:8000/",
            ip="127.0.0.2",
        )


class TestCheckUrlRefusesInvalid:
    """URLs that can never be fetched are InvalidURLError."""

    @pytest.mark.parametrize(
        "url",
        [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://example.com/",
            "javascript:alert(1)",
            "data:text/html,hi",
            "dict://example.com:11211/",
            "example.com/no-scheme",
            "http://",
            "http:///path",
            "http:\\\\127.0.0.1\\",
            "http://exa mple.com/",
            "http://%31%32%37.0.0.1/",
            "http://example.com\tx/",
            "http://exam\nple.com/",
            "http://example.com:99999/",
            "http://example.com:0/",
            "http://example.com:+80/",
            "http://example.com:8o/",
            "http://[example.com]/",
            "http://[::1/",
            "http://[fe80::1%25eth0]/",
            "http://[::1%25lo]:80/",
            "http://1.2.3.08/",
            "http://1.2.3.4.5/",
            "http://256.1.1.1/",
            "http://1.16777216/",
            "http://example.123/",
            "http://example..com/",
            "http://" + "a" * 64 + ".com/",
        ],
    )
    def test_invalid(self, url: str) -> None:
        with pytest.raises(InvalidURLError):
            check_url(url)

    @pytest.mark.parametrize(
        "url", ["docs.python.org", "example.com/no-scheme?q=1", "localhost:8000/docs/"]
    )
    def test_missing_scheme_suggests_one(self, url: str) -> None:
        """A URL typed without its scheme says so and shows the URL to try."""
        with pytest.raises(
            InvalidURLError, match=re.escape(f"no scheme: did you mean https://{url} ?")
        ):
            check_url(url)

    @pytest.mark.parametrize(
        ("url", "reason"),
        [
            ("javascript:alert(1)", "scheme 'javascript' is not http or https"),
            ("docs python org", "scheme '(none)' is not http or https"),
        ],
    )
    def test_other_schemes_are_named(self, url: str, reason: str) -> None:
        with pytest.raises(InvalidURLError, match=re.escape(reason)):
            check_url(url)

    @pytest.mark.parametrize(
        ("url", "secrets"),
        [
            ("http://alice:hunter2@example.com/", ("alice", "hunter2")),
            ("http://alice@example.com/", ("alice",)),
            ("http://127.0.0.2:8000@127.0.0.1:8000/", ("127.0.0.2",)),
            ("http://site.test:8000@127.0.0.1/", ("site.test",)),
            ("http://evil.test\\@127.0.0.1/", ("evil.test",)),
            ("http://:s3cret@example.com/", ("s3cret",)),
        ],
    )
    def test_credentials_refused_and_not_repeated(self, url: str, secrets: tuple[str, ...]) -> None:
        """Userinfo is refused and the message and .url never repeat it."""
        with pytest.raises(InvalidURLError) as info:
            check_url(url)
        for secret in secrets:
            assert secret not in str(info.value)
            assert secret not in info.value.url
        assert "***@" in info.value.url


class TestCheckUrlRefusesBlocked:
    """Local names and refused IP literals are BlockedURLError, before any lookup."""

    @pytest.mark.parametrize(
        ("url", "reason"),
        [
            ("http://localhost/", "local"),
            ("http://LocalHost./", "local"),
            ("http://api.localhost:8080/", "local"),
            ("http://localhost.localdomain/", "local"),
            ("http://ip6-localhost/", "local"),
            ("http://invalid/", "reserved"),
            ("http://foo.invalid/", "reserved"),
            ("http://metadata/", "metadata"),
            ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
            ("http://METADATA.GOOGLE.INTERNAL./", "metadata"),
            ("http://instance-data/latest/", "metadata"),
            ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "local"),
            ("http://127.0.0.1/", "loopback"),
            ("http://127.0.0.3/", "loopback"),
            ("http://127.000.000.001/", "loopback"),
            ("http://2130706433/", "loopback"),
            ("http://0x7f000001/", "loopback"),
            ("http://0x7f.0.0.1/", "loopback"),
            ("http://0177.0.0.1/", "loopback"),
            ("http://017700000001/", "loopback"),
            ("http://0x7f.1/", "loopback"),
            ("http://127.1/", "loopback"),
            ("http://127.0.1/", "loopback"),
            ("http://127.0.0.1./", "loopback"),
            ("http://\uff11\uff12\uff17.0.0.1/", "loopback"),
            ("http://127\u30020\u30020\u30021/", "loopback"),
            ("http://0/", "unspecified"),
            ("http://0.0.0.0/", "unspecified"),
            ("http://[::]/", "unspecified"),
            ("http://[::1]/", "loopback"),
            ("http://[0:0:0:0:0:0:0:1]/", "loopback"),
            ("http://[::ffff:127.0.0.1]/", "loopback"),
            ("http://[::FFFF:127.0.0.1]/", "loopback"),
            ("http://[::ffff:7f00:1]/", "loopback"),
            ("http://[::ffff:0:7f00:1]/", "loopback"),
            ("http://[::ffff:0:a9fe:a9fe]/latest/meta-data/", "link-local"),
            ("http://[4000::1]/", "reserved"),
            ("http://[fe00::1]/", "reserved"),
            ("http://10.0.0.1/", "private"),
            ("http://169.254.169.254/latest/meta-data/", "link-local"),
            ("https://[fd00::1]/", "private"),
        ],
    )
    def test_blocked(self, url: str, reason: str) -> None:
        with pytest.raises(BlockedURLError) as info:
            check_url(url)
        assert reason in info.value.reason

    def test_blocked_literal_names_the_address(self) -> None:
        """A refused literal carries the canonical address it was read as."""
        with pytest.raises(BlockedURLError) as info:
            check_url("http://0x7f.1:8080/x")
        assert info.value.address == "127.0.0.1"
        assert info.value.url == "http://0x7f.1:8080/x"
        assert str(info.value) == "http://0x7f.1:8080/x: blocked: 127.0.0.1 is loopback"

    def test_other_loopback_refused_when_one_is_allowed(self) -> None:
        """Allowing 127.0.0.2 does not open 127.0.0.1 or 127.0.0.3."""
        for url in ("http://127.0.0.1/", "http://127.0.0.3/", "http://[::1]/"):
            with pytest.raises(BlockedURLError):
                check_url(url, policy=LOOPBACK_ONLY)


class TestAddressPolicyRefusal:
    """Every non-public range is refused by default, with a reason."""

    @pytest.mark.parametrize(
        ("ip", "reason"),
        [
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "CGNAT"),
            ("100.127.255.254", "CGNAT"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("192.0.2.10", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.1", "benchmarking"),
            ("192.0.0.8", "reserved"),
            ("192.88.99.1", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fc00::1", "private"),
            ("fd12:3456::1", "private"),
            ("fe80::1", "link-local"),
            ("fe80::1%eth0", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("ff0e::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("100::1", "discard"),
            ("2001:2::1", "reserved"),
            ("2001:10::1", "reserved"),  # ORCHID
            ("2001:20::1", "reserved"),  # ORCHIDv2, inside the IETF block
            ("4000::1", "reserved"),
            ("5f00::1", "reserved"),  # SRv6 SIDs, inside 4000::/3
            ("8000::1", "reserved"),
            ("e000::1", "reserved"),
            ("fe00::1", "reserved"),
            ("400::1", "reserved"),
            ("::ffff:0:7f00:1", "loopback (IPv4 127.0.0.1 embedded in IPv4-translated"),
            ("::ffff:0:127.0.0.1", "loopback (IPv4 127.0.0.1 embedded in IPv4-translated"),
            (
                "::ffff:0:a9fe:a9fe",
                "link-local (IPv4 169.254.169.254 embedded in IPv4-translated",
            ),
            ("::ffff:0:a00:1", "private (IPv4 10.0.0.1 embedded in IPv4-translated"),
            ("::ffff:0:0:0", "unspecified (IPv4 0.0.0.0 embedded in IPv4-translated"),
            ("::ffff:0:6440:1", "CGNAT"),
            ("::ffff:127.0.0.1", "loopback (IPv4 127.0.0.1 embedded in IPv4-mapped"),
            ("::ffff:10.0.0.1", "private (IPv4 10.0.0.1 embedded in IPv4-mapped"),
            ("::127.0.0.1", "loopback (IPv4 127.0.0.1 embedded in IPv4-compatible"),
            ("::2", "unspecified (IPv4 0.0.0.2 embedded in IPv4-compatible"),
            ("64:ff9b::169.254.169.254", "link-local (IPv4 169.254.169.254 embedded in NAT64"),
            ("64:ff9b::a00:1", "private (IPv4 10.0.0.1 embedded in NAT64"),
            ("64:ff9b:1:7f00:0:100::", "loopback (IPv4 127.0.0.1 embedded in NAT64"),
            ("2002:7f00:1::", "loopback (IPv4 127.0.0.1 embedded in 6to4"),
            ("2002:a9fe:a9fe::1", "link-local (IPv4 169.254.169.254 embedded in 6to4"),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback (IPv4 127.0.0.1 embedded in Teredo"),
            (
                "2001:0:a00:1:8000:63bf:f7f7:f7f7",
                "private (IPv4 10.0.0.1 embedded in Teredo server",
            ),
            ("not-an-ip", "not an IP address"),
            ("0x7f.1", "not an IP address"),
        ],
    )
    def test_refused(self, ip: str, reason: str) -> None:
        refusal = AddressPolicy().refusal(ip)
        assert refusal is not None
        assert refusal.startswith(reason) or reason in refusal

    @pytest.mark.parametrize(
        "ip",
        [
            "8.8.8.8",
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "2606:4700::1111",
            "::ffff:0:808:808",
        ],
    )
    def test_public_allowed(self, ip: str) -> None:
        """Public addresses, and transition forms embedding public IPv4, pass."""
        assert AddressPolicy().refusal(ip) is None

    @pytest.mark.parametrize("version", [4, 6])
    def test_nothing_ipaddress_calls_special_is_allowed(self, version: int) -> None:
        """Sampled across the whole space: an allowed address is global unicast by every flag.

        Transition forms carrying IPv4 are judged by that IPv4 address instead (above).
        """
        bits = 32 if version == 4 else 128
        allowed = []
        for top in range(256):
            base = top << (bits - 8)
            for offset in (1, 1 << (bits - 12), 1 << (bits - 9), (1 << (bits - 8)) - 2):
                addr = ipaddress.ip_address(base + offset)
                if AddressPolicy().refusal(str(addr)) is None:
                    allowed.append(addr)
        assert allowed, "some public address must pass"
        for addr in allowed:
            if isinstance(addr, ipaddress.IPv6Address) and _carries_ipv4(addr):
                continue
            special = (
                addr.is_private,
                addr.is_reserved,
                addr.is_loopback,
                addr.is_link_local,
                addr.is_multicast,
                addr.is_unspecified,
                isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local,
                not addr.is_global,
            )
            assert not any(special), addr


def _carries_ipv4(addr: ipaddress.IPv6Address) -> bool:
    return addr.ipv4_mapped is not None or addr.sixtofour is not None or addr.teredo is not None


class TestAddressPolicyAllowList:
    """The operator's allow list opens exactly what it names."""

    @pytest.mark.parametrize(
        ("allow", "ip", "allowed"),
        [
            (["127.0.0.2"], "127.0.0.2", True),
            (["127.0.0.2"], "127.0.0.1", False),
            (["127.0.0.2"], "::ffff:127.0.0.2", True),
            (["127.0.0.2"], "::ffff:127.0.0.1", False),
            (["10.1.0.0/16"], "10.1.255.7", True),
            (["10.1.0.0/16"], "10.2.0.1", False),
            (["10.1.0.0/16"], "64:ff9b::a01:203", True),
            (["192.168.0.0/24", "172.16.5.5"], "172.16.5.5", True),
            (["fd00::/8"], "fd00::1234", True),
            (["fd00::/8"], "fe80::1", False),
            (["[::1]"], "::1", True),
            (["::ffff:10.0.0.0/104"], "10.9.9.9", True),
            ([" 169.254.169.254 "], "169.254.169.254", True),
            ("127.0.0.2", "127.0.0.2", True),
            ([], "10.0.0.1", False),
        ],
    )
    def test_allow(self, allow: list[str] | str, ip: str, allowed: bool) -> None:
        assert (AddressPolicy(allow).refusal(ip) is None) is allowed

    def test_allowed_is_canonical(self) -> None:
        assert AddressPolicy(["10.0.0.0/8", "::1"]).allowed == ("10.0.0.0/8", "::1/128")
        assert AddressPolicy(["Wiki.Corp.", "10.0.0.0/8"]).allowed == ("10.0.0.0/8", "wiki.corp")

    @pytest.mark.parametrize(
        ("allow", "host", "ip", "allowed"),
        [
            (["wiki.corp"], "wiki.corp", "10.0.0.7", True),
            (["wiki.corp"], "WIKI.CORP.", "127.0.0.1", True),
            (["wiki.corp"], "other.corp", "10.0.0.7", False),
            (["wiki.corp"], "sub.wiki.corp", "10.0.0.7", False),
            (["wiki.corp"], "wiki.corp.evil.example", "10.0.0.7", False),
            (["wiki.corp"], None, "10.0.0.7", False),
            (["bücher.corp"], "xn--bcher-kva.corp", "10.0.0.7", True),
            (["db1"], "db1", "192.168.1.5", True),
            (["10.0.0.0/8"], "any.name", "10.0.0.7", True),
            ([], "wiki.corp", "10.0.0.7", False),
        ],
    )
    def test_allowed_host_name_may_resolve_to_a_private_address(
        self, allow: list[str], host: str | None, ip: str, allowed: bool
    ) -> None:
        """HOST_OR_CIDR: a host name opens that name's answers, and only that name's."""
        assert (AddressPolicy(allow).refusal(ip, host=host) is None) is allowed

    def test_allowed_host_name_passes_the_name_refusal(self) -> None:
        """``localhost`` is refused by name unless the operator names it."""
        with pytest.raises(BlockedURLError):
            check_url("http://localhost:8080/", policy=AddressPolicy(["127.0.0.1"]))
        target = check_url("http://localhost:8080/", policy=AddressPolicy(["localhost"]))
        assert target.host == "localhost"

    @pytest.mark.parametrize(
        ("entry", "canonical"),
        [
            ("10.1.0.0/16", "10.1.0.0/16"),
            ("10.1.2.3", "10.1.2.3/32"),
            ("[::1]", "::1/128"),
            ("Wiki.Corp.", "wiki.corp"),
            ("localhost", "localhost"),
            ("db1", "db1"),
            ("bücher.corp", "xn--bcher-kva.corp"),
        ],
    )
    def test_parse_allow_entry(self, entry: str, canonical: str) -> None:
        assert parse_allow_entry(entry) == canonical

    @pytest.mark.parametrize(
        "entry",
        [
            "",
            "exa mple.corp",
            "http://wiki.corp",
            "wiki.corp/8",
            "wiki..corp",
            "10.0.0.0/33",
            "10.0.0.1/8",
            "10.0.0.256",
            "0177.0.0.1",
            "0.0.0.0/0",
            "::/0",
            "fe80::1%eth0",
        ],
    )
    def test_invalid_entry_is_config_error_naming_it(self, entry: str) -> None:
        with pytest.raises(ConfigError) as info:
            AddressPolicy(["10.0.0.0/8", entry])
        assert repr(entry) in str(info.value)


class TestParseResolveEntry:
    """curl-style --resolve HOST:PORT:ADDR entries."""

    @pytest.mark.parametrize(
        ("entry", "expected"),
        [
            ("docs.test:443:127.0.0.2", ("docs.test", 443, "127.0.0.2")),
            ("Docs.Test.:8080:10.0.0.5", ("docs.test", 8080, "10.0.0.5")),
            ("docs.test:80:[::1]", ("docs.test", 80, "::1")),
            ("docs.test:80:::1", ("docs.test", 80, "::1")),
            ("docs.test:80:0:0:0:0:0:0:0:1", ("docs.test", 80, "::1")),
            ("bücher.de:443:192.0.2.1", ("xn--bcher-kva.de", 443, "192.0.2.1")),
        ],
    )
    def test_valid(self, entry: str, expected: tuple[str, int, str]) -> None:
        assert parse_resolve_entry(entry) == expected

    @pytest.mark.parametrize(
        "entry",
        [
            "docs.test",
            "docs.test:443",
            "docs.test:443:",
            ":443:127.0.0.1",
            "docs.test::127.0.0.1",
            "docs.test:http:127.0.0.1",
            "docs.test:70000:127.0.0.1",
            "docs.test:443:not-an-ip",
            "docs.test:443:0x7f.1",
            "docs.test:443:[fe80::1%eth0]",
            "127.0.0.1:443:127.0.0.2",
            "do cs.test:443:127.0.0.1",
        ],
    )
    def test_invalid_is_usage_error(self, entry: str) -> None:
        with pytest.raises(UsageError):
            parse_resolve_entry(entry)


SECRET = "secretpw"

#: Malformed spellings of a URL with userinfo; none may echo the password (or the user).
MALFORMED_USERINFO = [
    "http:\\\\someuser:secretpw@host.example/",
    "http:\\someuser:secretpw@host.example/",
    "http:someuser:secretpw@host.example/",
    "http:/someuser:secretpw@host.example/",
    "http:///someuser:secretpw@host.example/",
    "http:////someuser:secretpw@host.example/",
    "http:/\\/someuser:secretpw@host.example/",
    "https:\\/someuser:secretpw@host.example/",
    "HTTP:\\\\someuser:secretpw@host.example/",
    " http:\\\\someuser:secretpw@host.example/",
    "ht\ttp://someuser:secretpw@host.example/",
    "http://someuser:secretpw@@host.example/",
    "http://someuser:secretpw@host.example:99999/",
    "http://someuser:secretpw@[::1/",
    "http://someuser:secretpw@exa mple.com/",
    "http://someuser:secretpw\n@host.example/",
    "http://someuser:secretpw\\@host.example/",
    "http://someuser:secretpw@host.example\\x",
    "http://someuser%3Asecretpw%40host.example/",
    "http://someuser:secretpw\uff03@host.example/",
    "http://[someuser:secretpw@host.example]/",
    "http://someuser:secretpw@[::1]x/",
    "http://someuser:secretpw:x@host.example/",
    "http://someuser:secretpw@",
    "http://someuser:secretpw@/",
    "//someuser:secretpw@host.example/",
    "someuser:secretpw@host.example",
    "ftp://someuser:secretpw@host.example/",
]
#: No plain "@" ends the userinfo (it is escaped, full-width, or the password holds "/",
#: "?" or "#", which ends the authority first), so a parser reads the password as a port.
CUT_SHORT_USERINFO = [
    "http://someuser:secretpw%40host.example/",
    "http://someuser:secretpw%2540host.example/",
    "http://someuser:secretpw\uff20host.example/",
    "http://someuser:secretpw/x@host.example/",
    "http://someuser:secretpw?x@host.example/",
    "http://someuser:secretpw#x@host.example/",
    "http://someuser:secretpw/@host.example/",
]


def _assert_hidden(text: str) -> None:
    for secret in (SECRET, "someuser"):
        assert secret not in text
        assert urllib.parse.quote(secret + "@") not in text


class TestRedaction:
    """No message repeats what looks like userinfo, however the URL is spelled."""

    @pytest.mark.parametrize("url", MALFORMED_USERINFO + CUT_SHORT_USERINFO)
    def test_redact_url(self, url: str) -> None:
        shown = redact_url(url)
        _assert_hidden(shown)
        assert "***@" in shown

    @pytest.mark.parametrize("url", MALFORMED_USERINFO + CUT_SHORT_USERINFO)
    def test_check_url(self, url: str) -> None:
        with pytest.raises(UsageError) as info:
            check_url(url)
        _assert_hidden(str(info.value))

    @pytest.mark.parametrize("url", MALFORMED_USERINFO)
    def test_normalize_url(self, url: str) -> None:
        with pytest.raises(InvalidURLError) as info:
            normalize_url(url)
        _assert_hidden(str(info.value))
        _assert_hidden(info.value.url)

    @pytest.mark.parametrize("url", CUT_SHORT_USERINFO)
    def test_normalize_url_port_message(self, url: str) -> None:
        with pytest.raises(InvalidURLError) as info:
            normalize_url(url)
        _assert_hidden(str(info.value))

    @pytest.mark.parametrize(
        ("url", "shown"),
        [
            ("http://host.example/@user/post", "http://host.example/@user/post"),
            ("http://host.example/a?mail=a@b", "http://host.example/a?mail=a@b"),
            ("http://host.example:8080/x", "http://host.example:8080/x"),
            ("http://[::1]:8080/@x", "http://[::1]:8080/@x"),
            ("http:\\\\a:b@host.example/x", "http:\\\\***@host.example/x"),
            ("http://a:b@host.example/x?next=c@d", "http://***@host.example/x?next=c@d"),
        ],
    )
    def test_keeps_what_is_not_userinfo(self, url: str, shown: str) -> None:
        """An "@" in the path or query of a plain authority is not userinfo."""
        assert redact_url(url) == shown

    def test_port_text_is_not_repeated(self) -> None:
        """A non-numeric "port" may be a password whose "@" went missing."""
        with pytest.raises(InvalidURLError) as info:
            check_url("http://host.example:secretpw/")
        assert SECRET not in info.value.reason
