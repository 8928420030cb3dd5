"""Decide what robots.txt allows: an RFC 9309 parser, a non-backtracking matcher, a policy.

The parser and the matcher are pure: they never fetch, never sleep, never raise on any
robots.txt text, and keep no module-level state (only frozen constants). Matching uses
no regular expressions: each pattern is compiled once into literal segments split on
``*`` and decided by one forward scan, so its cost is bounded by segments x target
length whatever the pattern.

:class:`RobotsPolicy` is the one asynchronous piece: per crawl, it awaits an injected
loader once per origin, shares in-flight loads and caches the result on itself. It
never does I/O of its own.

>>> rules = parse_robots_txt("User-agent: *\\nDisallow: /private/\\nCrawl-delay: 2")
>>> is_allowed(rules, "https://example.com/private/x"), rules.crawl_delay_ms
(False, 2000)
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import math
import string
from collections.abc import Awaitable, Callable, Iterable, Iterator
from types import MappingProxyType
from urllib.parse import urljoin, urlsplit

from sitelore.errors import InvalidURLError
from sitelore.urlparts import remove_dot_segments

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "MAX_CRAWL_DELAY_MS",
    "PARSE_LIMIT_BYTES",
    "RobotsLoader",
    "RobotsPolicy",
    "RobotsRule",
    "RobotsRules",
    "RobotsState",
    "allow_all_policy",
    "create_robots_policy",
    "is_allowed",
    "match_pattern",
    "normalise_target",
    "parse_robots_txt",
    "product_token",
    "robots_origin",
    "unavailable_rules",
    "unreachable_rules",
]

#: Only this many bytes (UTF-8) of a robots.txt are parsed; the rest is ignored.
PARSE_LIMIT_BYTES = 500 * 1024
#: Crawl-delay is clamped to [0, this] milliseconds.
MAX_CRAWL_DELAY_MS = 10_000

_TOKEN_CHARS = frozenset(string.ascii_letters + "_-")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_HEX = frozenset(string.hexdigits)
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+-.")
_NUMBER_CHARS = frozenset(string.digits + ".eE+-")
_ROBOTS_PATH = "/robots.txt"
_DEFAULT_PORTS = MappingProxyType({"http": 80, "https": 443})


class RobotsState(enum.StrEnum):
    """Where a rule set came from; the crawl tells a 5xx refusal from real rules by it."""

    PARSED = "parsed"  #: a robots.txt body was parsed
    UNAVAILABLE = "unavailable"  #: 4xx, network error, too large...: allow all
    UNREACHABLE = "unreachable"  #: 5xx: disallow all
    FIXED = "fixed"  #: a constant (ALLOW_ALL / DISALLOW_ALL)


# -- normalisation -----------------------------------------------------------------------


def _escape_char(ch: str) -> str:
    if ch == "*":
        return "%2A"
    if ch == "$":
        return "%24"
    return "".join(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))


def _normalise(text: str) -> str:
    """Percent-encode non-ASCII, decode unreserved escapes, upper-case other escapes.

    Literal ``*`` and ``$`` become ``%2A`` and ``%24`` so that they compare equal to
    the escaped forms a pattern uses for them.
    """
    if text.isascii() and "%" not in text and "*" not in text and "$" not in text:
        return text
    out: list[str] = []
    i, size = 0, len(text)
    while i < size:
        ch = text[i]
        if ch == "%" and i + 2 < size and text[i + 1] in _HEX and text[i + 2] in _HEX:
            decoded = chr(int(text[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else text[i : i + 3].upper())
            i += 3
            continue
        out.append(_escape_char(ch) if ch in "*$" or not ch.isascii() else ch)
        i += 1
    return "".join(out)


def _is_scheme(text: str) -> bool:
    if text in ("https", "http"):
        return True
    return text[0].isalpha() and set(text) <= _SCHEME_CHARS


def _path_and_query(url: str) -> str:
    """The path plus ``?query`` of a URL (no fragment); ``/`` for an empty path."""
    hash_at = url.find("#")
    if hash_at >= 0:
        url = url[:hash_at]
    scheme_end = url.find("://")
    if scheme_end > 0 and _is_scheme(url[:scheme_end]):
        start = scheme_end + 3
        cut = url.find("/", start)
        question = url.find("?", start)
        if cut < 0 or 0 <= question < cut:
            cut = question
        url = url[cut:] if cut >= 0 else "/"
    return url if url.startswith("/") else "/" + url


def normalise_target(url: str) -> str:
    """Return the normalised path + query that patterns are matched against.

    Besides the escapes (see :func:`_normalise`), dot segments of the path are resolved
    as the request would resolve them, so ``/public/../private/`` cannot dodge a rule.

    >>> normalise_target("https://example.com/%7euser/caf\\u00e9?q=%2f#top")
    '/~user/caf%C3%A9?q=%2F'
    """
    target = _normalise(_path_and_query(url))
    if "/." not in target:
        return target
    path, mark, query = target.partition("?")
    return remove_dot_segments(path) + mark + query


# -- compiled rules ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RobotsRule:
    """One ``allow`` or ``disallow`` pattern, compiled into literal segments.

    ``head`` must start the target, each of ``middle`` is found in order after it, and
    ``tail`` is found after those (at the very end when ``anchored``). ``wild`` is
    False for a pattern without ``*``, which is a plain prefix (or exact) test.
    """

    allow: bool
    pattern: str
    head: str
    middle: tuple[str, ...]
    tail: str
    wild: bool
    anchored: bool

    @classmethod
    def compile(cls, pattern: str, *, allow: bool) -> RobotsRule:
        """Compile ``pattern`` as written in robots.txt (``*`` any run, final ``$`` end)."""
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        parts = [_normalise(part) for part in body.split("*")]
        if len(parts) == 1:
            return cls(allow, pattern, parts[0], (), "", wild=False, anchored=anchored)
        middle = tuple(part for part in parts[1:-1] if part)
        return cls(allow, pattern, parts[0], middle, parts[-1], wild=True, anchored=anchored)

    @property
    def length(self) -> int:
        """The pattern's length as written (``*`` and ``$`` counted): its priority."""
        return len(self.pattern)

    @property
    def matches_everything(self) -> bool:
        """True when every path (anything starting with ``/``) matches."""
        if self.anchored or self.middle:
            return False
        return self.head == "" or (self.head == "/" and (not self.wild or self.tail == ""))

    def matches(self, target: str) -> bool:
        """Decide the pattern against a normalised target, scanning forward only."""
        if not target.startswith(self.head):
            return False
        if not self.wild:
            return len(target) == len(self.head) if self.anchored else True
        pos = len(self.head)
        for segment in self.middle:
            found = target.find(segment, pos)
            if found < 0:
                return False
            pos = found + len(segment)
        if self.anchored:
            return len(target) - len(self.tail) >= pos and target.endswith(self.tail)
        return target.find(self.tail, pos) >= 0


def match_pattern(pattern: str, url: str) -> bool:
    """Return True when the robots.txt ``pattern`` matches ``url`` (or a bare path).

    >>> match_pattern("/*.pdf$", "/a/b.pdf"), match_pattern("/*.pdf$", "/a.pdf?v=1")
    (True, False)
    """
    return RobotsRule.compile(pattern, allow=False).matches(normalise_target(url))


def _priority(rule: RobotsRule) -> tuple[int, bool]:
    return (-rule.length, not rule.allow)


# -- rule sets ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _RuleIndex:
    """Rules bucketed by the second character of their head, computed once per rule set.

    A rule whose head has two or more characters can only match a target with the same
    second character (targets start with ``/``); shorter heads go in every bucket.
    Each bucket keeps the priority order.
    """

    buckets: dict[str, tuple[RobotsRule, ...]]
    rest: tuple[RobotsRule, ...]

    @classmethod
    def build(cls, rules: tuple[RobotsRule, ...]) -> _RuleIndex:
        rest = tuple(rule for rule in rules if len(rule.head) < 2)
        keys = {rule.head[1] for rule in rules if len(rule.head) >= 2}
        buckets = {
            key: tuple(rule for rule in rules if len(rule.head) < 2 or rule.head[1] == key)
            for key in keys
        }
        return cls(buckets, rest)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RobotsRules:
    """The rules that apply to one crawler on one origin; immutable.

    ``rules`` are ordered by priority (longest pattern first, allow before disallow on
    a tie), so the first match decides. ``disallow_all`` is True when nothing but
    ``/robots.txt`` may be fetched. ``source`` says where the rules came from in words
    (``"parsed"``, ``"unavailable (404)"``, ``"unreachable (503)"``).
    """

    rules: tuple[RobotsRule, ...] = ()
    crawl_delay_ms: int | None = None
    sitemaps: tuple[str, ...] = ()
    disallow_all: bool = False
    state: RobotsState = RobotsState.PARSED
    source: str = "parsed"
    _index: _RuleIndex = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", _RuleIndex.build(self.rules))

    def candidates(self, target: str) -> tuple[RobotsRule, ...]:
        """The rules that can match ``target``, in priority order (first match decides)."""
        return self._index.buckets.get(target[1:2], self._index.rest)

    @property
    def unreachable(self) -> bool:
        """True for the disallow-all of a failing server (5xx), not of written rules."""
        return self.state is RobotsState.UNREACHABLE


#: Everything allowed, no delay, no sitemaps.
ALLOW_ALL = RobotsRules(state=RobotsState.FIXED, source="allow all")
#: Nothing allowed but ``/robots.txt`` itself.
DISALLOW_ALL = RobotsRules(
    rules=(RobotsRule.compile("/", allow=False),),
    disallow_all=True,
    state=RobotsState.FIXED,
    source="disallow all",
)


def unavailable_rules(reason: str) -> RobotsRules:
    """Allow-all rules for a robots.txt that is missing or could not be read (``reason``)."""
    return dataclasses.replace(
        ALLOW_ALL, state=RobotsState.UNAVAILABLE, source=f"unavailable ({reason})"
    )


def unreachable_rules(reason: str) -> RobotsRules:
    """Disallow-all rules for a server that failed to serve robots.txt (``reason``)."""
    return dataclasses.replace(
        DISALLOW_ALL, state=RobotsState.UNREACHABLE, source=f"unreachable ({reason})"
    )


def is_allowed(rules: RobotsRules, url: str) -> bool:
    """Return True when ``rules`` let the crawler fetch ``url`` (matched on path + query).

    The longest matching pattern wins, allow wins a tie, no match means allowed, and
    ``/robots.txt`` is always allowed.
    """
    target = normalise_target(url)
    if target == _ROBOTS_PATH or target.startswith(_ROBOTS_PATH + "?"):
        return True
    if rules.disallow_all:
        return False
    for rule in rules.candidates(target):
        if rule.matches(target):
            return rule.allow
    return True


# -- parsing -----------------------------------------------------------------------------


def product_token(user_agent: str) -> str:
    """The leading ``[A-Za-z_-]`` run of a User-Agent (``"FooBot/2.1 (+x)"`` -> ``FooBot``)."""
    text = user_agent.strip()
    end = 0
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return text[:end]


def _agent_key(value: str) -> str:
    """How a ``user-agent`` value is compared: ``*`` or its lower-cased product token."""
    if value == "*" or (value.startswith("*") and value[1:2].isspace()):
        return "*"
    return product_token(value).lower()


def _capped(text: str) -> str:
    """The first ``PARSE_LIMIT_BYTES`` of ``text``; a line cut by the limit is dropped."""
    if len(text) <= PARSE_LIMIT_BYTES // 4:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= PARSE_LIMIT_BYTES:
        return text
    head = data[:PARSE_LIMIT_BYTES].decode("utf-8", "ignore")
    if data[PARSE_LIMIT_BYTES : PARSE_LIMIT_BYTES + 1] in (b"\n", b"\r"):
        return head
    return head[: max(head.rfind("\n"), head.rfind("\r")) + 1]


def _records(text: str) -> Iterator[tuple[str, str]]:
    """Yield ``(key, value)`` for every readable line: key lower-cased, both trimmed."""
    text = _capped(text).removeprefix("\ufeff")
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        key, colon, value = line.split("#", 1)[0].partition(":")
        if colon:
            yield key.strip().lower(), value.strip()


def _delay_ms(value: str) -> int | None:
    """Crawl-delay seconds as clamped milliseconds; None when zero, negative or invalid."""
    if not value or not set(value) <= _NUMBER_CHARS:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if math.isnan(seconds) or seconds <= 0:
        return None
    if seconds * 1000 >= MAX_CRAWL_DELAY_MS:
        return MAX_CRAWL_DELAY_MS
    millis = math.floor(seconds * 1000 + 0.5)
    return millis if millis > 0 else None


def _sitemap_url(value: str, base_url: str | None = None) -> str | None:
    if not value or any(ch.isspace() for ch in value):
        return None
    try:
        if base_url is not None:
            value = urljoin(base_url, value)
        parts = urlsplit(value)
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.netloc:
        return None
    return value


@dataclasses.dataclass(slots=True)
class _Group:
    """A group while it is being parsed: its agents, rules and delays."""

    agents: set[str] = dataclasses.field(default_factory=set)
    rules: list[RobotsRule] = dataclasses.field(default_factory=list)
    delays: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(slots=True)
class _Parsed:
    groups: list[_Group] = dataclasses.field(default_factory=list)
    sitemaps: dict[str, None] = dataclasses.field(default_factory=dict)


def _parse(records: Iterable[tuple[str, str]], base_url: str | None = None) -> _Parsed:
    parsed = _Parsed()
    group: _Group | None = None
    reading_agents = False
    for key, value in records:
        if key == "user-agent":
            if group is None or not reading_agents:
                group = _Group()
                parsed.groups.append(group)
            group.agents.add(_agent_key(value))
            reading_agents = True
        elif key in ("allow", "disallow", "crawl-delay"):
            reading_agents = False
            if group is not None:
                _add_member(group, key, value)
        elif key == "sitemap":
            url = _sitemap_url(value, base_url)
            if url is not None:
                parsed.sitemaps.setdefault(url)
    return parsed


def _add_member(group: _Group, key: str, value: str) -> None:
    if key == "crawl-delay":
        delay = _delay_ms(value)
        if delay is not None:
            group.delays.append(delay)
    elif value:
        group.rules.append(RobotsRule.compile(value, allow=key == "allow"))


def _applicable(groups: list[_Group], token: str) -> list[_Group]:
    if token:
        specific = [group for group in groups if token in group.agents]
        if specific:
            return specific
    return [group for group in groups if "*" in group.agents]


def parse_robots_txt(
    text: str, user_agent: str = "sitelore", *, base_url: str | None = None
) -> RobotsRules:
    """Parse robots.txt ``text`` into the rules for ``user_agent``; never raises.

    ``user_agent`` is a product token or a full User-Agent string; groups naming its
    product token (whole token, any case) are merged, else all ``*`` groups are.
    ``Sitemap:`` values must be absolute http(s) URLs, unless ``base_url`` (the
    robots.txt URL) is given: then relative ones (``/sitemap.xml``) are resolved
    against it.
    """
    parsed = _parse(_records(text), base_url)
    chosen = _applicable(parsed.groups, product_token(user_agent).lower())
    rules = sorted((rule for group in chosen for rule in group.rules), key=_priority)
    delays = [delay for group in chosen for delay in group.delays]
    has_allow = any(rule.allow for rule in rules)
    return RobotsRules(
        rules=tuple(rules),
        crawl_delay_ms=max(delays, default=None),
        sitemaps=tuple(parsed.sitemaps),
        disallow_all=not has_allow and any(rule.matches_everything for rule in rules),
    )


# -- the per-crawl policy ----------------------------------------------------------------

#: Loads the rules of one origin (``"https://example.com:8443"``); may raise.
RobotsLoader = Callable[[str], Awaitable[RobotsRules]]


def robots_origin(url: str) -> str:
    """The origin robots.txt is cached under: ``scheme://host[:port]`` (default port omitted).

    Raises :class:`~sitelore.errors.InvalidURLError` for a URL that is not http(s) or
    has no host.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURLError(url, f"cannot parse the URL: {exc}") from None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        raise InvalidURLError(url, "not an http(s) URL with a host")
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _clamp_delay(millis: int | None) -> int:
    return max(0, min(MAX_CRAWL_DELAY_MS, millis or 0))


def _consume_outcome(task: asyncio.Task[RobotsRules]) -> None:
    """Mark a load's exception as retrieved even when every asker has gone away."""
    if not task.cancelled():
        task.exception()


class RobotsPolicy:
    """robots.txt for one crawl: rules per origin, loaded once, in-flight loads shared.

    A loader exception reaches every asker waiting on that load and is not cached: the
    next ask loads again. With no loader, everything is allowed and nothing is loaded.
    """

    def __init__(self, loader: RobotsLoader | None) -> None:
        self._loader = loader
        self._cache: dict[str, RobotsRules] = {}
        self._loading: dict[str, asyncio.Task[RobotsRules]] = {}

    async def rules_for(self, url: str) -> RobotsRules:
        """Return the rules for ``url``'s origin, loading them on first use."""
        if self._loader is None:
            return ALLOW_ALL
        origin = robots_origin(url)
        cached = self._cache.get(origin)
        if cached is not None:
            return cached
        task = self._loading.get(origin)
        if task is None:
            task = asyncio.ensure_future(self._load(self._loader, origin))
            task.add_done_callback(_consume_outcome)
            self._loading[origin] = task
        return await asyncio.shield(task)

    async def _load(self, loader: RobotsLoader, origin: str) -> RobotsRules:
        try:
            rules = await loader(origin)
            self._cache[origin] = rules
            return rules
        finally:
            del self._loading[origin]

    async def is_allowed(self, url: str) -> bool:
        """Return True when robots.txt lets the crawler fetch ``url``."""
        return is_allowed(await self.rules_for(url), url)

    async def crawl_delay_ms(self, url: str) -> int:
        """The Crawl-delay for ``url``'s origin in ms, clamped to [0, 10 000]; 0 if none."""
        return _clamp_delay((await self.rules_for(url)).crawl_delay_ms)


def create_robots_policy(loader: RobotsLoader) -> RobotsPolicy:
    """A policy for one crawl that loads each origin's rules with ``loader``."""
    return RobotsPolicy(loader)


def allow_all_policy() -> RobotsPolicy:
    """A policy that never loads and allows everything, delay 0 (``respect_robots=false``)."""
    return RobotsPolicy(None)
