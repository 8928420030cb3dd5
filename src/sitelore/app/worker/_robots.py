"""robots.txt rules shared by every crawl of a Redis namespace: fetched once per origin.

Only the worker holding an origin's lease may fetch its robots.txt (the lease is the
per-origin lock, across crawls), so each origin's robots.txt is requested once per TTL
for all workers and crawls. The rules travel as JSON (patterns, not compiled matchers)
and each worker keeps a short-lived local copy. Throttles stay per crawl: an origin
that asked for a wait the crawl cannot make (Retry-After, Crawl-delay) is marked once,
and no worker of that crawl requests it again. Parsing and matching stay in
``sitelore.core.robots``; the request goes through ``sitelore.crawl.robots_loader`` (the fetcher,
with its address guard).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Protocol

from sitelore.adapters.frontier_redis import split_url
from sitelore.core.ports import Clock
from sitelore.core.robots import RobotsLoader, RobotsRule, RobotsRules, RobotsState

__all__ = ["RobotsShelf", "SharedRobots", "rules_from_json", "rules_to_json"]

#: How long a worker trusts its local copy before reading Redis again.
_LOCAL_SECONDS = 60.0


class RobotsShelf(Protocol):
    """**Protocol:** where rules are shared (``RedisFrontier`` in production)."""

    async def robots(self, crawl_id: str, host: str) -> str | None:
        """The stored rules (JSON) of origin ``host``, or None."""
        ...

    async def save_robots(self, crawl_id: str, host: str, rules_json: str, ttl_ms: int) -> None:
        """Store the rules of origin ``host`` for ``ttl_ms``."""
        ...

    async def throttled(self, crawl_id: str, host: str) -> str | None:
        """Why origin ``host`` is throttled for the rest of the crawl, or None."""
        ...

    async def throttle(self, crawl_id: str, host: str, reason: str) -> None:
        """Throttle origin ``host`` for the rest of the crawl (the first reason stays)."""
        ...


def rules_to_json(rules: RobotsRules) -> str:
    """Serialise rules (their patterns in priority order, not the compiled matchers)."""
    data = {f.name: getattr(rules, f.name) for f in dataclasses.fields(rules) if f.init}
    data["rules"] = [[rule.pattern, rule.allow] for rule in rules.rules]
    return json.dumps(data, separators=(",", ":"))


def rules_from_json(text: str) -> RobotsRules:
    """Rebuild rules saved by :func:`rules_to_json` (patterns are compiled again)."""
    data: dict[str, Any] = json.loads(text)
    return RobotsRules(
        rules=tuple(RobotsRule.compile(str(p), allow=bool(a)) for p, a in data["rules"]),
        crawl_delay_ms=data["crawl_delay_ms"],
        requested_crawl_delay_ms=data.get("requested_crawl_delay_ms", data["crawl_delay_ms"]),
        sitemaps=tuple(data["sitemaps"]),
        disallow_all=bool(data["disallow_all"]),
        state=RobotsState(data["state"]),
        source=str(data["source"]),
    )


@dataclasses.dataclass(slots=True)
class SharedRobots:
    """The robots rules of one crawl as this worker sees them (Redis, cached locally)."""

    frontier: RobotsShelf
    crawl_id: str
    loader: RobotsLoader
    clock: Clock
    _: dataclasses.KW_ONLY
    ttl_ms: int
    _local: dict[str, tuple[float, RobotsRules]] = dataclasses.field(
        default_factory=dict, init=False
    )
    _throttled: dict[str, str] = dataclasses.field(default_factory=dict, init=False)

    async def cached(self, url: str) -> RobotsRules | None:
        """The rules of ``url``'s origin if some worker fetched them; None if nobody has."""
        origin = split_url(url)[0]
        now = self.clock.monotonic()
        local = self._local.get(origin)
        if local is not None and local[0] > now:
            return local[1]
        text = await self.frontier.robots(self.crawl_id, origin)
        if text is None:
            return None
        rules = rules_from_json(text)
        self._local[origin] = (now + _LOCAL_SECONDS, rules)
        return rules

    async def load(self, url: str) -> RobotsRules:
        """Fetch the robots.txt of ``url``'s origin (only under its lease) and share the rules.

        The guard's refusal of the robots.txt URL itself propagates, as in a local crawl.
        """
        origin = split_url(url)[0]
        rules = await self.loader(origin)
        await self.frontier.save_robots(self.crawl_id, origin, rules_to_json(rules), self.ttl_ms)
        self._local[origin] = (self.clock.monotonic() + _LOCAL_SECONDS, rules)
        return rules

    async def throttled(self, origin: str) -> str | None:
        """Why no worker may request ``origin`` any more, or None (a throttle is final)."""
        known = self._throttled.get(origin)
        if known is None:
            known = await self.frontier.throttled(self.crawl_id, origin)
            if known is not None:
                self._throttled[origin] = known
        return known

    async def throttle(self, origin: str, reason: str) -> None:
        """Stop every worker's requests to ``origin`` for the rest of the crawl."""
        self._throttled.setdefault(origin, reason)
        await self.frontier.throttle(self.crawl_id, origin, reason)
