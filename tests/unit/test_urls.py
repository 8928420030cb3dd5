"""URL identity and crawl scope: tables of inputs and the normalised form or decision."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitelore.core.errors import InvalidURLError
from sitelore.core.models import SkipReason
from sitelore.core.options import CrawlOptions
from sitelore.core.printable import printable
from sitelore.core.urls import Scope, normalize_url, origin

NORMALIZED = [
    pytest.param("http://example.com/a", "http://example.com/a", id="already-normal"),
    pytest.param("https://example.com", "https://example.com/", id="empty-path-becomes-slash"),
    pytest.param("https://example.com?x=1", "https://example.com/?x=1", id="query-no-path"),
    pytest.param("https://example.com/a#frag", "https://example.com/a", id="fragment-stripped"),
    pytest.param("https://example.com/a#", "https://example.com/a", id="empty-fragment"),
    pytest.param("https://example.com/a?b=1#c?d", "https://example.com/a?b=1", id="frag-after-q"),
    pytest.param(
        "HTTPS://EXAMPLE.COM/A", "https://example.com/A", id="scheme-host-lower-path-kept"
    ),
    pytest.param("http://example.com:80/", "http://example.com/", id="default-port-http"),
    pytest.param("https://example.com:443/", "https://example.com/", id="default-port-https"),
    pytest.param("http://example.com:443/", "http://example.com:443/", id="other-port-kept"),
    pytest.param("https://example.com:8443/", "https://example.com:8443/", id="custom-port"),
    pytest.param("http://example.com:0080/", "http://example.com/", id="port-leading-zeros"),
    pytest.param("http://example.com:/", "http://example.com/", id="empty-port"),
    pytest.param("http://example.com/a/./b", "http://example.com/a/b", id="dot-segment"),
    pytest.param("http://example.com/a/b/../c", "http://example.com/a/c", id="dotdot-segment"),
    pytest.param("http://example.com/../../a", "http://example.com/a", id="dotdot-above-root"),
    pytest.param("http://example.com/a/..", "http://example.com/", id="trailing-dotdot"),
    pytest.param("http://example.com/a/.", "http://example.com/a/", id="trailing-dot"),
    pytest.param("http://example.com/a/%2E%2e/b", "http://example.com/b", id="escaped-dotdot"),
    pytest.param("http://example.com/a/.b/..c", "http://example.com/a/.b/..c", id="dotfiles-kept"),
    pytest.param("http://example.com/docs/", "http://example.com/docs/", id="trailing-slash-kept"),
    pytest.param("http://example.com/docs", "http://example.com/docs", id="no-slash-not-added"),
    pytest.param("http://example.com//a//b", "http://example.com//a//b", id="empty-segments-kept"),
    pytest.param("http://example.com/%7Euser", "http://example.com/~user", id="unreserved-decoded"),
    pytest.param("http://example.com/%41%2d%5F", "http://example.com/A-_", id="more-unreserved"),
    pytest.param("http://example.com/a%2fb", "http://example.com/a%2Fb", id="slash-kept-escaped"),
    pytest.param("http://example.com/a%2Fb", "http://example.com/a%2Fb", id="upper-hex-stays"),
    pytest.param("http://example.com/%e2%82%ac", "http://example.com/%E2%82%AC", id="hex-upper"),
    pytest.param("http://example.com/€", "http://example.com/%E2%82%AC", id="non-ascii-path"),
    pytest.param("http://example.com/?q=ü", "http://example.com/?q=%C3%BC", id="non-ascii-query"),
    pytest.param("http://example.com/a b", "http://example.com/a%20b", id="space-escaped"),
    pytest.param("http://example.com/100%", "http://example.com/100%25", id="lone-percent"),
    pytest.param("http://example.com/%zz", "http://example.com/%25zz", id="bad-escape"),
    pytest.param("http://example.com/a|b", "http://example.com/a%7Cb", id="unsafe-ascii"),
    pytest.param("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1", id="query-order"),
    pytest.param("http://example.com/?page=1", "http://example.com/?page=1", id="query-page-kept"),
    pytest.param("http://example.com/?a=1+2", "http://example.com/?a=1+2", id="query-plus-kept"),
    pytest.param("http://example.com/?A=B", "http://example.com/?A=B", id="query-case-kept"),
    pytest.param(
        "http://example.com/?a[]=1", "http://example.com/?a%5B%5D=1", id="brackets-escaped"
    ),
    pytest.param("http://example.com/?x=%2f", "http://example.com/?x=%2F", id="query-hex-upper"),
    pytest.param("http://example.com/?", "http://example.com/", id="empty-query-dropped"),
    pytest.param("http://example.com/?a/../b", "http://example.com/?a/../b", id="query-dots-kept"),
    pytest.param("  http://example.com/a \n", "http://example.com/a", id="surrounding-space"),
    pytest.param("http://exa\tmple.com/a\nb", "http://example.com/ab", id="tabs-newlines-removed"),
    pytest.param("http://Bücher.example/", "http://xn--bcher-kva.example/", id="idna-host"),
    pytest.param("http://xn--BCHER-kva.example/", "http://xn--bcher-kva.example/", id="punycode"),
    pytest.param("http://%65xample.com/", "http://example.com/", id="escaped-host"),
    pytest.param("http://example.com./", "http://example.com/", id="trailing-dot-host-dropped"),
    pytest.param("http://127.1/", "http://127.0.0.1/", id="ipv4-shorthand"),
    pytest.param("http://2130706433/", "http://127.0.0.1/", id="ipv4-decimal"),
    pytest.param("http://0x7f.0.0.1/", "http://127.0.0.1/", id="ipv4-hex"),
    pytest.param("http://0177.0.0.1/", "http://127.0.0.1/", id="ipv4-octal"),
    pytest.param("http://[::FFFF:1.2.3.4]:8080/", "http://[::ffff:102:304]:8080/", id="ipv6"),
    pytest.param("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/", id="ipv6-compressed"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZED)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(("url", "expected"), NORMALIZED)
def test_normalize_url_is_idempotent_on_the_table(url: str, expected: str) -> None:
    assert normalize_url(expected) == expected


INVALID = [
    pytest.param("", id="empty"),
    pytest.param("example.com/a", id="no-scheme"),
    pytest.param("/relative/path", id="relative"),
    pytest.param("ftp://example.com/", id="ftp"),
    pytest.param("mailto:someone@example.com", id="mailto"),
    pytest.param("javascript:alert(1)", id="javascript"),
    pytest.param("data:text/html,hi", id="data"),
    pytest.param("http:example.com", id="no-slashes"),
    pytest.param("http:///path", id="no-host"),
    pytest.param("http://user:pw@example.com/", id="credentials"),
    pytest.param("http://@example.com/", id="empty-credentials"),
    pytest.param("http://example.com:99999/", id="port-too-large"),
    pytest.param("http://example.com:8o/", id="port-not-digits"),
    pytest.param("http://exa mple.com/", id="space-in-host"),
    pytest.param("http://a..b/", id="empty-label"),
    pytest.param("http://example.com\\a/", id="backslash-in-host"),
    pytest.param("http://[::1/", id="unclosed-ipv6"),
    pytest.param("http://[zz::1]/", id="bad-ipv6"),
    pytest.param("http://[fe80::1%25eth0]/", id="ipv6-zone"),
    pytest.param("http://1.2.3.4.5/", id="ipv4-too-many-parts"),
    pytest.param("http://1.2.3.256/", id="ipv4-part-too-large"),
    pytest.param("http://example.09/", id="numeric-tld-not-octal"),
]


@pytest.mark.parametrize("url", INVALID)
def test_normalize_url_refuses(url: str) -> None:
    with pytest.raises(InvalidURLError):
        normalize_url(url)


def test_invalid_url_error_never_repeats_credentials() -> None:
    with pytest.raises(InvalidURLError) as info:
        normalize_url("https://alice:s3cret@example.com/private")
    assert "s3cret" not in str(info.value)
    assert "alice" not in info.value.url


def test_trailing_slash_is_identity() -> None:
    assert normalize_url("http://example.com/dir") != normalize_url("http://example.com/dir/")


def test_query_distinguishes_pages() -> None:
    assert normalize_url("http://e.com/l?page=1") != normalize_url("http://e.com/l?page=2")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://Docs.Example.com:443/guide/", "https://docs.example.com"),
        ("http://example.com:8080/a?b", "http://example.com:8080"),
        ("http://[::1]:80/", "http://[::1]"),
    ],
)
def test_origin(url: str, expected: str) -> None:
    assert origin(url) == expected


_URL_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
_TLD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)
_HOSTS = st.one_of(
    st.sampled_from(["example.com", "Docs.Example.COM", "bücher.de", "127.1", "[::1]"]),
    # A name whose last label is numeric is an IPv4 address (WHATWG): end with letters.
    st.tuples(st.lists(_LABEL, max_size=3), _TLD).map(lambda t: ".".join([*t[0], t[1]])),
    st.tuples(st.lists(_LABEL, max_size=3), _TLD).map(lambda t: ".".join([*t[0], t[1]]).upper()),
    st.integers(0, 2**32 - 1).map(str),  # IPv4 as one decimal number
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
)
_PORTS = st.one_of(
    st.sampled_from(["", ":80", ":443", ":8080"]),
    st.integers(0, 65535).map(lambda port: f":{port}"),
)


def _valid_url(
    scheme: str, host: str, port: str, path: str, query: str | None, fragment: str | None
) -> str:
    url = f"{scheme}://{host}{port}/{path}"
    if query is not None:
        url += f"?{query}"
    if fragment is not None:
        url += f"#{fragment}"
    return url


@settings(max_examples=400)
@given(
    scheme=st.sampled_from(["http", "HTTP", "https", "hTTps"]),
    host=_HOSTS,
    port=_PORTS,
    path=_URL_TEXT,
    query=st.none() | _URL_TEXT,
    fragment=st.none() | _URL_TEXT,
)
def test_normalize_url_accepts_valid_urls_and_is_idempotent(
    scheme: str, host: str, port: str, path: str, query: str | None, fragment: str | None
) -> None:
    """Every well-formed http(s) URL is accepted (none may be refused) and normalises once."""
    url = _valid_url(scheme, host, port, path, query, fragment)
    once = normalize_url(url)  # an InvalidURLError here fails the test: the URL is valid
    assert normalize_url(once) == once
    assert once.isascii()
    assert "#" not in once
    assert not any(ch <= " " or ch == "\x7f" for ch in once)
    assert once.startswith(scheme.lower() + "://")
    assert origin(url) == origin(once)
    assert once.startswith(origin(url) + "/")
    authority = once.split("://", 1)[1].split("/", 1)[0]
    default = {"http": 80, "https": 443}[scheme.lower()]
    if port and int(port[1:]) != default:
        assert authority.endswith(f":{int(port[1:])}")
    else:  # no port, or the scheme's default: dropped
        assert not authority.endswith(f":{default}")


_REFUSED_PREFIXES = ("ftp://", "mailto:", "http://user:s3cret@")


@settings(max_examples=300)
@given(
    prefix=st.sampled_from(
        [
            *("", "http://", "https://", "HTTP://a.test/"),
            *("http://a.test:", "http://[", "http://%"),  # bad ports and hosts
            *_REFUSED_PREFIXES,
        ]
    ),
    text=st.text(max_size=60),
)
def test_normalize_url_raises_only_invalid_url_error(prefix: str, text: str) -> None:
    """Any text either normalises to a clean http(s) URL or raises InvalidURLError.

    Other schemes and credentials are always refused, the error never repeats a
    password, and text without ``://`` (once tabs and newlines are dropped) never passes.
    """
    url = prefix + text
    error: InvalidURLError | None = None
    once = ""
    try:
        once = normalize_url(url)
    except InvalidURLError as exc:  # any other exception fails the test
        error = exc
    if error is not None:
        assert error.reason
        assert str(error) == printable(f"{error.url}: {error.reason}")
        if prefix == "http://user:s3cret@" and "s3cret" not in text:
            assert "s3cret" not in str(error)
            assert "credentials" in error.reason
        return
    assert prefix not in _REFUSED_PREFIXES
    assert "://" in url.replace("\t", "").replace("\n", "").replace("\r", "")
    assert once.startswith(("http://", "https://"))
    assert once.isascii()
    assert "#" not in once
    assert "@" not in once.split("://", 1)[1].split("/", 1)[0]
    assert normalize_url(once) == once


# --- scope -----------------------------------------------------------------------------------

SEED = "https://docs.example.com/guide/"

SAME_DOMAIN = [
    pytest.param("https://docs.example.com/other", None, id="same-host"),
    pytest.param("http://docs.example.com/", None, id="other-scheme-same-host"),
    pytest.param("https://docs.example.com:8443/", None, id="other-port-same-host"),
    pytest.param("https://a.docs.example.com/", None, id="subdomain"),
    pytest.param("https://b.a.docs.example.com/", None, id="deep-subdomain"),
    pytest.param("https://DOCS.example.com./x", None, id="trailing-dot-host"),
    pytest.param("https://example.com/", SkipReason.FILTERED, id="parent-domain"),
    pytest.param("https://evil-docs.example.com/", SkipReason.FILTERED, id="suffix-not-label"),
    pytest.param("https://docs.example.com.evil.net/", SkipReason.FILTERED, id="prefix-trick"),
    pytest.param("https://other.org/", SkipReason.FILTERED, id="other-domain"),
    pytest.param("mailto:x@docs.example.com", SkipReason.INVALID, id="invalid"),
]


@pytest.mark.parametrize(("url", "expected"), SAME_DOMAIN)
def test_scope_same_domain(url: str, expected: SkipReason | None) -> None:
    assert Scope.build(SEED).allows(url) == expected


def test_scope_any_domain_allows_other_hosts() -> None:
    scope = Scope.build(SEED, same_domain=False)
    assert scope.allows("https://other.org/") is None


PREFIX = [
    pytest.param("/guide/", "https://docs.example.com/guide/intro", None, id="under-prefix"),
    pytest.param("/guide/", "https://docs.example.com/guide/", None, id="prefix-itself"),
    pytest.param("/guide/", "https://docs.example.com/guide", SkipReason.FILTERED, id="no-slash"),
    pytest.param("/guide/", "https://docs.example.com/api/", SkipReason.FILTERED, id="elsewhere"),
    pytest.param("/guide/", "https://docs.example.com/Guide/", SkipReason.FILTERED, id="case"),
    pytest.param("/guide", "https://docs.example.com/guidebook", None, id="string-prefix"),
    pytest.param("guide/", "https://docs.example.com/guide/x", None, id="leading-slash-added"),
    pytest.param("/guide/", "https://docs.example.com/x/../guide/y", None, id="after-dots"),
    pytest.param("/g%c3%bc/", "https://docs.example.com/gü/a", None, id="escapes-normalised"),
    pytest.param("/guide/", "https://docs.example.com/?p=/guide/", SkipReason.FILTERED, id="query"),
]


@pytest.mark.parametrize(("prefix", "url", "expected"), PREFIX)
def test_scope_path_prefix(prefix: str, url: str, expected: SkipReason | None) -> None:
    assert Scope.build(SEED, path_prefix=prefix).allows(url) == expected


GLOBS = [
    pytest.param("*/private/*", "https://docs.example.com/private/a", True, id="star-crosses"),
    pytest.param("*/private/*", "https://docs.example.com/a/b/private/c/d", True, id="deep"),
    pytest.param("*/private/*", "https://docs.example.com/privateer", False, id="no-match"),
    pytest.param("*/PRIVATE/*", "https://docs.example.com/Private/x", True, id="case-insensitive"),
    pytest.param("*.pdf", "https://docs.example.com/a/b.PDF", True, id="suffix"),
    pytest.param("*.pdf", "https://docs.example.com/a/b.pdf?x=1", False, id="anchored-end"),
    pytest.param("*/v?/*", "https://docs.example.com/v2/x", True, id="qmark-one-char"),
    pytest.param("*/v?/*", "https://docs.example.com/v10/x", False, id="qmark-not-two"),
    pytest.param("*?page=*", "https://docs.example.com/l?page=2", True, id="literal-qmark-ok"),
    pytest.param("https://docs.example.com/a", "https://docs.example.com/a", True, id="exact"),
    pytest.param("https://docs.example.com/a", "https://docs.example.com/ab", False, id="exact-no"),
    pytest.param("*changelog*", "https://docs.example.com/changelog", True, id="contains"),
    pytest.param("*a*b*c*", "https://docs.example.com/c/b/a", False, id="order-matters"),
    pytest.param("*a*b*c*", "https://docs.example.com/a/b/c", True, id="in-order"),
    pytest.param("*[x]*", "https://docs.example.com/?a[x]=1", True, id="brackets-literal"),
    pytest.param("*/über/*", "https://docs.example.com/über/x", True, id="non-ascii-pattern"),
    pytest.param("**", "https://docs.example.com/", True, id="double-star"),
    pytest.param("https://*.example.com/*", "https://a.docs.example.com/x", True, id="host-glob"),
    # A glob starting with "/" is a path glob: it would never match a whole URL.
    pytest.param("/api/*", "https://docs.example.com/api/v1/x", True, id="path-glob"),
    pytest.param("/api/*", "https://docs.example.com/v1/api/x", False, id="path-glob-anchored"),
    pytest.param("/A/b.html", "https://docs.example.com:8443/a/B.html", True, id="path-exact"),
    pytest.param("/a/b", "https://docs.example.com/a/b?x=1", False, id="path-then-query"),
    pytest.param("/l?page=*", "https://docs.example.com/l?page=2", True, id="path-query"),
    pytest.param("/", "https://docs.example.com", True, id="path-root"),
]


@pytest.mark.parametrize(("pattern", "url", "excluded"), GLOBS)
def test_scope_exclude_globs(pattern: str, url: str, excluded: bool) -> None:
    scope = Scope.build(SEED, exclude_patterns=[pattern])
    assert (scope.allows(url) == SkipReason.FILTERED) is excluded


def test_scope_hostile_glob_finishes_fast() -> None:
    scope = Scope.build(
        SEED, same_domain=False, exclude_patterns=["*a" * 40 + "*b", "*" + "?" * 200 + "*z*"]
    )
    url = "https://docs.example.com/" + "a" * 50_000
    started = time.perf_counter()
    assert scope.allows(url) is None
    assert time.perf_counter() - started < 1.0


def test_scope_from_options() -> None:
    options = CrawlOptions(same_domain=True, path_prefix="/guide/", exclude_patterns=("*/old/*",))
    scope = Scope.from_options(SEED, options)
    assert scope.allows("https://docs.example.com/guide/new") is None
    assert scope.allows("https://docs.example.com/guide/old/x") == SkipReason.FILTERED
    assert scope.allows("https://docs.example.com/blog/") == SkipReason.FILTERED
    assert scope.allows("https://example.org/guide/") == SkipReason.FILTERED


def test_scope_is_frozen() -> None:
    scope = Scope.build(SEED)
    with pytest.raises(AttributeError):
        scope.path_prefix = "/x"  # type: ignore[misc]


def test_scope_refuses_an_invalid_seed() -> None:
    with pytest.raises(InvalidURLError):
        Scope.build("ftp://example.com/")
