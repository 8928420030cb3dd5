"""A scale-out crawl's settings as Redis keeps them: one typed record, written once.

``enqueue_crawl`` writes :meth:`CrawlMeta.fields` into the crawl's ``meta`` hash; each
worker reads it back with :meth:`CrawlMeta.parse` (a record another sitelore version
wrote is a ``ConfigError`` naming the crawl). The scripts add the crawl's live state
(``state``, ``deadline_ms``, ``truncated_reason`` ...), read through :class:`CrawlState`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sitelore.core.errors import ConfigError
from sitelore.core.models import SnapshotMode
from sitelore.core.options import CrawlOptions

__all__ = ["META_VERSION", "CrawlMeta", "CrawlState"]

#: The layout of the ``meta`` hash this module writes and reads.
META_VERSION = "2"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CrawlMeta:
    """What every worker of a crawl needs to know, fixed when it was queued."""

    seed: str
    options: CrawlOptions
    clamped: tuple[str, ...] = ()
    user_agent: str
    buckets: int
    delay_ms: int
    lease_ttl_ms: int
    hb_timeout_ms: int
    max_attempts: int
    robots_ttl_ms: int
    keep_ms: int
    #: ``capture``: each worker writes its own WARC file into ``archive``; ``replay``:
    #: pages come from the archive in ``archive``, never the network.
    snapshots: SnapshotMode = SnapshotMode.LIVE
    archive: str = ""
    #: ``update`` of a source: validators sent, 304 keeps, 404/410 removes; the change
    #: of each page is recorded for the report.
    incremental: bool = False

    def fields(self) -> dict[str, str]:
        """The hash fields to store (``pages_left`` starts at the page budget)."""
        return {
            "version": META_VERSION,
            "seed": self.seed,
            "options": self.options.model_dump_json(by_alias=True),
            "clamped": "\n".join(self.clamped),
            "user_agent": self.user_agent,
            "pages_left": str(self.options.max_pages),
            **{name: str(getattr(self, name)) for name in _NUMBERS},
            "snapshots": str(self.snapshots),
            "archive": self.archive,
            "incremental": "1" if self.incremental else "0",
        }

    @classmethod
    def parse(cls, crawl_id: str, fields: Mapping[str, str]) -> CrawlMeta:
        """Read the record back; ``ConfigError`` when it is missing or of another layout."""
        try:
            if fields.get("version") != META_VERSION:
                raise ValueError(f"metadata version {fields.get('version')!r}")
            return cls(
                seed=fields["seed"],
                options=CrawlOptions.model_validate_json(fields["options"]),
                clamped=tuple(line for line in fields.get("clamped", "").split("\n") if line),
                user_agent=fields["user_agent"],
                **{name: int(fields[name]) for name in _NUMBERS},
                snapshots=SnapshotMode(fields.get("snapshots", "live")),
                archive=fields.get("archive", ""),
                incremental=fields.get("incremental") == "1",
            )
        except (KeyError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ConfigError(
                f"crawl {crawl_id!r}: cannot read its settings in Redis ({exc}); "
                "was it queued by another sitelore version?"
            ) from exc


#: The fields of :class:`CrawlMeta` stored as decimal integers (its ``int`` fields).
_NUMBERS = [field.name for field in dataclasses.fields(CrawlMeta) if field.type == "int"]


@dataclasses.dataclass(frozen=True, slots=True)
class CrawlState:
    """The live part of a crawl's ``meta`` hash, as the scripts keep it."""

    fields: Mapping[str, str]

    @property
    def running(self) -> bool:
        """True until the crawl finished (budget, deadline, or nothing left)."""
        return self.fields.get("state") == "running"

    @property
    def deadline_ms(self) -> int:
        """When the crawl ends, on Redis's clock."""
        return int(self.fields.get("deadline_ms", "0"))

    @property
    def truncated_reason(self) -> str:
        """``max_pages``, ``deadline`` or empty."""
        return self.fields.get("truncated_reason", "")
