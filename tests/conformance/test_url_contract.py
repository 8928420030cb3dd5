"""The URL contract (``sitelore.core.urls``' docstring): one table through all three entry points.

Every row is one URL and the one normal form the contract gives it. ``normalize_url``
must return it; ``guard.check_url`` must spell it the same way (``Target.url``) or refuse
the URL, as the row says; ``robots.normalise_target`` must return its path and query with
RFC 9309's one extra rule (a literal ``*`` / ``$`` written ``%2A`` / ``%24``). A property
test then holds the three to each other on generated paths.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sitelore.core.errors import BlockedURLError, InvalidURLError
from sitelore.core.guard import check_url
from sitelore.core.robots import normalise_target
from sitelore.core.urls import normalize_url

#: The guard refuses this URL (it accepts less than the normaliser reads).
REFUSED = "refused"

#: (id, URL, normal form, what the guard does: "same" or REFUSED)
TABLE = [
    # rule 2 and 4: scheme and host
    ("scheme-host-lowered", "HTTP://Docs.Example.COM/A", "http://docs.example.com/A", "same"),
    ("idna-host", "http://Bücher.example/", "http://xn--bcher-kva.example/", "same"),
    ("trailing-dot-host", "http://a.test./x", "http://a.test/x", "same"),
    ("ipv4-hex-host", "http://0x8.8.8.8/", "http://8.8.8.8/", "same"),
    ("ipv6-compressed", "http://[2001:4860:0:0::8888]/", "http://[2001:4860::8888]/", "same"),
    ("escaped-host", "http://%61.test/", "http://a.test/", REFUSED),
    # rule 5: port
    ("default-port", "https://a.test:443/x", "https://a.test/x", "same"),
    ("other-port", "http://a.test:8080/x", "http://a.test:8080/x", "same"),
    ("port-zeros", "http://a.test:0080/", "http://a.test/", "same"),
    # rule 6: percent-encoding
    ("unreserved-lower-decoded", "http://a.test/%7euser", "http://a.test/~user", "same"),
    ("unreserved-upper-decoded", "http://a.test/%7Euser/%41", "http://a.test/~user/A", "same"),
    ("reserved-hex-upper", "http://a.test/a%2fb?x=%3d", "http://a.test/a%2Fb?x=%3D", "same"),
    ("brackets-escaped", "http://a.test/a[1]?b[]=2", "http://a.test/a%5B1%5D?b%5B%5D=2", "same"),
    ("non-ascii-utf8", "http://a.test/café?q=ü", "http://a.test/caf%C3%A9?q=%C3%BC", "same"),
    (
        "unsafe-ascii",
        'http://a.test/a b"<>|^`{}',
        "http://a.test/a%20b%22%3C%3E%7C%5E%60%7B%7D",
        "same",
    ),
    ("backslash", "http://a.test/a\\b", "http://a.test/a%5Cb", "same"),
    ("lone-percent", "http://a.test/100%", "http://a.test/100%25", "same"),
    ("bad-escape", "http://a.test/%zz", "http://a.test/%25zz", "same"),
    ("sub-delims-kept", "http://a.test/a:b@c!d&e'f(g)h+i,j;k=l*m$n", None, "same"),
    # rule 7: dot segments
    ("dot-segments", "http://a.test/a/./b/../c", "http://a.test/a/c", "same"),
    ("escaped-dot-segments", "http://a.test/a/%2E%2e/b", "http://a.test/b", "same"),
    ("dotdot-above-root", "http://a.test/../../a", "http://a.test/a", "same"),
    ("trailing-dotdot", "http://a.test/a/b/..", "http://a.test/a/", "same"),
    ("query-dots-kept", "http://a.test/a?p=/../b", "http://a.test/a?p=/../b", "same"),
    ("dotfiles-kept", "http://a.test/.well-known/x..y", "http://a.test/.well-known/x..y", "same"),
    # rules 8 to 10: path, query, fragment
    ("empty-path", "http://a.test", "http://a.test/", "same"),
    ("empty-path-query", "http://a.test?x=1", "http://a.test/?x=1", "same"),
    ("case-slash-kept", "http://a.test/Docs/", "http://a.test/Docs/", "same"),
    ("empty-segments-kept", "http://a.test//a//b", "http://a.test//a//b", "same"),
    ("query-kept", "http://a.test/?b=2&a=1+1&A=B", "http://a.test/?b=2&a=1+1&A=B", "same"),
    ("empty-query-dropped", "http://a.test/x?", "http://a.test/x", "same"),
    ("fragment-dropped", "http://a.test/x?y=1#top?z", "http://a.test/x?y=1", "same"),
    # rule 1 and 3: what only the guard refuses, and what both refuse
    ("surrounding-space", "  http://a.test/x \n", "http://a.test/x", "same"),
    ("inner-tab", "http://a.test/a\tb", "http://a.test/ab", REFUSED),
]
ROWS = [pytest.param(url, normal or url, guard, id=name) for name, url, normal, guard in TABLE]


def _robots_form(normal: str) -> str:
    """The path and query of a normal form, with RFC 9309's ``*`` / ``$`` rule."""
    after_scheme = normal.partition("://")[2]
    target = after_scheme[after_scheme.index("/") :]
    return target.replace("*", "%2A").replace("$", "%24")


class TestOneTableThreeEntryPoints:
    @pytest.mark.parametrize(("url", "normal", "guard"), ROWS)
    def test_normalize_url_gives_the_normal_form(self, url: str, normal: str, guard: str) -> None:
        """The crawl's identity of the URL is the table's normal form, and a fixed point."""
        assert normalize_url(url) == normal
        assert normalize_url(normal) == normal

    @pytest.mark.parametrize(("url", "normal", "guard"), ROWS)
    def test_the_guard_spells_it_the_same_or_refuses(
        self, url: str, normal: str, guard: str
    ) -> None:
        """What the fetcher requests and the store keeps is the crawl's identity."""
        if guard == REFUSED:
            with pytest.raises(InvalidURLError):
                check_url(url)
        else:
            assert check_url(url).url == normal

    @pytest.mark.parametrize(("url", "normal", "guard"), ROWS)
    def test_robots_matches_the_normal_target(self, url: str, normal: str, guard: str) -> None:
        """robots.txt rules are matched against the normal form's path and query."""
        assert normalise_target(url) == _robots_form(normal)
        assert normalise_target(normal) == _robots_form(normal)


_PATH_PIECES = st.sampled_from(
    ["a", "B", "/", ".", "..", "%7e", "%7E", "%2f", "%2E", "%", "[", "]", "*", "$", "~", " ",
     "é", "?", "=", "&", "%zz", "|", "\\", ":", "@", "+", ";", ","]
)  # fmt: skip


@given(path=st.lists(_PATH_PIECES, max_size=12).map("".join))
@example(path="/a/./b/../c")
@example(path="/%7e[1]/%2e%2E/x?q=%7e")
def test_the_three_entry_points_agree_on_any_path(path: str) -> None:
    """For any path and query, guard and robots agree with ``normalize_url``."""
    url = "http://a.test/" + path
    normal = normalize_url(url)
    try:
        assert check_url(url).url == normal
    except BlockedURLError:  # pragma: no cover - a.test is never refused
        raise
    assert normalise_target(url) == _robots_form(normal)
    assert normalize_url(normal) == normal
