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
from urllib.parse import urlsplit

from sitelore.core.errors import InvalidURLError
from sitelore.core.sitemaps import sitemap_url
from sitelore.core.urlparts import normalize_escapes, request_target, trim_url

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "MAX_CRAWL_DELAY_MS",
    "PARSE_LIMIT_BYTES",
    "RobotsLoader",
    "RobotsMemo",
    "RobotsPolicy",
    "RobotsRule",
    "RobotsRules",
    "RobotsState",
    "allow_all_policy",
    "complete_lines",
    "create_robots_policy",
    "is_allowed",
    "normalise_target",
    "parse_robots_txt",
    "product_token",
    "robots_origin",
    "unavailable_rules",
    "unreachable_reason",
    "unreachable_rules",
]

#: Only this many bytes (UTF-8) of a robots.txt are parsed (RFC 9309 2.5 asks for at least
#: 500 KiB); the rest is ignored, and a line cut by the limit is dropped.
PARSE_LIMIT_BYTES = 512 * 1024
#: Crawl-delay is clamped to [0, this] milliseconds.
MAX_CRAWL_DELAY_MS = 10_000
# The largest Crawl-delay kept as asked (about 31 years), so that no value overflows.
_DELAY_BOUND_MS = 10**12

_TOKEN_CHARS = frozenset(string.ascii_letters + "_-")
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


def _normalise(text: str) -> str:
    """Bring a rule's path or a URL's target to the one form both sides are compared in.

    The escapes of the URL contract (:func:`sitelore.core.urlparts.normalize_escapes`:
    unreserved escapes decoded, others upper-cased, what a URL cannot carry encoded as
    UTF-8), plus RFC 9309's own rule (2.2.3): a literal ``*`` or ``$`` becomes
    ``%2A`` / ``%24``, so it compares equal to the escaped form a rule uses for it
    and never acts as a wildcard or an anchor.
    """
    return _escape_wildcards(normalize_escapes(text))


def _escape_wildcards(text: str) -> str:
    if "*" in text or "$" in text:
        return text.replace("*", "%2A").replace("$", "%24")
    return text


def _is_scheme(text: str) -> bool:
    if text in ("https", "http"):
        return True
    return text[0].isalpha() and set(text) <= _SCHEME_CHARS


def _path_and_query(url: str) -> str:
    """The path plus ``?query`` of a URL (no fragment); ``/`` for an empty path."""
    url = trim_url(url)
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

    The path and query of the URL contract (:func:`sitelore.core.urlparts.request_target`:
    escapes, dot segments resolved as the request resolves them, so
    ``/public/../private/`` cannot dodge a rule; a bare ``?`` dropped), then
    :func:`_normalise`'s ``*`` / ``$`` rule.

    >>> normalise_target("https://example.com/%7euser/caf\\u00e9?q=%2f#top")
    '/~user/caf%C3%A9?q=%2F'
    """
    path, _, query = _path_and_query(url).partition("?")
    return _escape_wildcards(request_target(path, query))


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
        """Compile ``pattern`` as written in robots.txt (``*`` any run, final ``$`` end).

        Matching is anchored at the start of the path. A pattern that starts with
        neither ``/`` nor ``*`` (``fish/``) is read as if it began with ``/``, as
        Google's parser does; one that starts with ``*`` (``*m``) matches anywhere.
        """
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        if not body.startswith(("/", "*")):
            body = "/" + body
        parts = [_normalise(part) for part in body.split("*")]
        if len(parts) == 1:
            return cls(allow, pattern, parts[0], (), "", wild=False, anchored=anchored)
        middle = tuple(part for part in parts[1:-1] if part)
        return cls(allow, pattern, parts[0], middle, parts[-1], wild=True, anchored=anchored)

    @property
    def length(self) -> int:
        """The pattern's length in octets as written (``*`` and ``$`` counted): its
        priority (RFC 9309 2.2.2: the match with the most octets wins)."""
        return len(self.pattern.encode("utf-8", "surrogatepass"))

    @property
    def matches_everything(self) -> bool:
        """True when every path (anything starting with ``/``) matches.

        That is ``/``, or ``*`` runs around at most a leading ``/`` (``*``, ``/*``,
        ``/*$``); ``*m`` only matches paths holding an ``m``.
        """
        if self.middle or self.head not in ("", "/"):
            return False
        if not self.wild:
            return not self.anchored
        return self.tail == ""

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
    a tie), so the first match decides. ``crawl_delay_ms`` is clamped to
    [0, :data:`MAX_CRAWL_DELAY_MS`]; ``0`` is an explicit zero. ``disallow_all`` is
    True when nothing but ``/robots.txt`` may be fetched. ``source`` says where the
    rules came from in words (``"parsed"``, ``"unavailable (404)"``,
    ``"unreachable (503)"``).
    """

    rules: tuple[RobotsRule, ...] = ()
    crawl_delay_ms: int | None = None
    #: The Crawl-delay as the site wrote it, before the clamp (None: absent or invalid).
    #: A crawl that may not wait that long between requests stops asking the origin.
    requested_crawl_delay_ms: int | None = None
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


def unreachable_reason(rules: RobotsRules) -> str:
    """Why an unreachable robots.txt refuses a crawl's start URL, in words.

    >>> unreachable_reason(unreachable_rules("503"))
    'robots.txt could not be read (server error or no answer: 503), so nothing may be fetched'
    """
    detail = rules.source.removeprefix("unreachable (").removesuffix(")")
    return (
        f"robots.txt could not be read (server error or no answer: {detail}),"
        " so nothing may be fetched"
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


def complete_lines(data: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes of ``data``, without a last line the limit cut short.

    >>> complete_lines(b"a\\nbb\\nccc", 4), complete_lines(b"a\\nbb\\nccc", 3)
    (b'a\\nbb', b'a\\n')
    """
    if len(data) <= limit:
        return data
    if data[limit : limit + 1] in (b"\n", b"\r"):
        return data[:limit]
    head = data[:limit]
    return head[: max(head.rfind(b"\n"), head.rfind(b"\r")) + 1]


def _capped(text: str) -> str:
    """The first ``PARSE_LIMIT_BYTES`` of ``text``; a line cut by the limit is dropped."""
    if len(text) <= PARSE_LIMIT_BYTES // 4:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= PARSE_LIMIT_BYTES:
        return text
    return complete_lines(data, PARSE_LIMIT_BYTES).decode("utf-8", "ignore")


def _records(text: str) -> Iterator[tuple[str, str]]:
    """Yield ``(key, value)`` for every readable line: key lower-cased, both trimmed."""
    text = _capped(text).removeprefix("\ufeff")
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        key, colon, value = line.split("#", 1)[0].partition(":")
        if colon:
            yield key.strip().lower(), value.strip()


def _delay_ms(value: str) -> int | None:
    """Crawl-delay seconds as milliseconds, not yet clamped; None when negative or invalid.

    ``0`` is an explicit zero (no delay asked), not an absent value. A value too large
    to represent counts as :data:`_DELAY_BOUND_MS`.
    """
    if not value or not set(value) <= _NUMBER_CHARS:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if math.isnan(seconds) or seconds < 0:
        return None
    if seconds * 1000 >= _DELAY_BOUND_MS:
        return _DELAY_BOUND_MS
    return math.floor(seconds * 1000 + 0.5)


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
        elif key in ("allow", "disallow"):
            reading_agents = False  # only a rule ends the user-agent list (RFC 9309 2.2.4)
            if group is not None and value:
                group.rules.append(RobotsRule.compile(value, allow=key == "allow"))
        elif key == "crawl-delay":
            delay = _delay_ms(value)
            if group is not None and delay is not None:
                group.delays.append(delay)
        elif key == "sitemap":
            url = sitemap_url(value, base_url or "")
            if url is not None:
                parsed.sitemaps.setdefault(url)
    return parsed


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
    requested = max((delay for group in chosen for delay in group.delays), default=None)
    has_allow = any(rule.allow for rule in rules)
    return RobotsRules(
        rules=tuple(rules),
        crawl_delay_ms=None if requested is None else min(requested, MAX_CRAWL_DELAY_MS),
        requested_crawl_delay_ms=requested,
        sitemaps=tuple(parsed.sitemaps),
        disallow_all=not has_allow and any(rule.matches_everything for rule in rules),
    )


# -- the per-crawl policy ----------------------------------------------------------------

#: Loads the rules of one origin (``"https://example.com:8443"``); may raise.
RobotsLoader = Callable[[str], Awaitable[RobotsRules]]


def robots_origin(url: str) -> str:
    """The origin robots.txt is cached under: ``scheme://host[:port]`` (default port omitted).

    Raises :class:`~sitelore.core.errors.InvalidURLError` for a URL that is not http(s) or
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


class RobotsMemo:
    """robots.txt rules per origin, kept for ``ttl`` seconds, shared by several policies.

    One memo per process lets every live crawl of an origin use one robots.txt fetch
    (RFC 9309 2.4: cache for up to 24 hours); loads in flight are shared too.
    """

    def __init__(self, monotonic: Callable[[], float], *, ttl: float = 86_400.0) -> None:
        self._monotonic = monotonic
        self._ttl = ttl
        self._rules: dict[str, tuple[float, RobotsRules]] = {}
        self.loading: dict[str, asyncio.Task[RobotsRules]] = {}

    def get(self, origin: str) -> RobotsRules | None:
        """The origin's rules if loaded less than ``ttl`` ago."""
        kept = self._rules.get(origin)
        if kept is None or kept[0] <= self._monotonic():
            return None
        return kept[1]

    def put(self, origin: str, rules: RobotsRules) -> None:
        """Keep the origin's rules for ``ttl`` seconds from now."""
        self._rules[origin] = (self._monotonic() + self._ttl, rules)


class RobotsPolicy:
    """robots.txt for a crawl: rules per origin, loaded once, in-flight loads shared.

    A loader exception reaches every asker waiting on that load and is not cached: the
    next ask loads again. With no loader, everything is allowed and nothing is loaded.
    ``memo`` shares the rules with other crawls (default: this policy's own).
    """

    def __init__(self, loader: RobotsLoader | None, memo: RobotsMemo | None = None) -> None:
        self._loader = loader
        self._memo = memo or RobotsMemo(lambda: 0.0, ttl=math.inf)

    async def cached(self, url: str) -> RobotsRules | None:
        """The rules of ``url``'s origin if already loaded, else None."""
        if self._loader is None:
            return ALLOW_ALL
        return self._memo.get(robots_origin(url))

    async def load(self, url: str) -> RobotsRules:
        """The rules of ``url``'s origin, loading them unless kept (one load at a time)."""
        if self._loader is None:
            return ALLOW_ALL
        origin = robots_origin(url)
        cached = self._memo.get(origin)
        if cached is not None:
            return cached
        loading = self._memo.loading
        task = loading.get(origin)
        if task is None:
            task = asyncio.ensure_future(self._load(self._loader, origin))
            task.add_done_callback(_consume_outcome)
            loading[origin] = task
        return await asyncio.shield(task)

    async def _load(self, loader: RobotsLoader, origin: str) -> RobotsRules:
        try:
            rules = await loader(origin)
            self._memo.put(origin, rules)
            return rules
        finally:
            del self._memo.loading[origin]

    #: The rules for ``url``'s origin, loading them on first use.
    rules_for = load

    async def is_allowed(self, url: str) -> bool:
        """Return True when robots.txt lets the crawler fetch ``url``."""
        return is_allowed(await self.rules_for(url), url)

    async def crawl_delay_ms(self, url: str) -> int:
        """The Crawl-delay for ``url``'s origin in ms, clamped to [0, 10 000]; 0 if none."""
        return _clamp_delay((await self.rules_for(url)).crawl_delay_ms)


def create_robots_policy(loader: RobotsLoader, memo: RobotsMemo | None = None) -> RobotsPolicy:
    """A policy that loads each origin's rules with ``loader`` (kept in ``memo``)."""
    return RobotsPolicy(loader, memo)


def allow_all_policy() -> RobotsPolicy:
    """A policy that never loads and allows everything, delay 0 (``respect_robots=false``)."""
    return RobotsPolicy(None)
