"""Validated operator settings: hard caps, private-address opt-ins, user agent, store, sources.

Settings come from defaults < settings file < environment < flags. This module is
pure: :func:`load_settings` takes the file's text and an environment mapping that the
edges read and pass in. Loose values are never guessed: a wrong type is a
``ConfigError`` naming the key and the file (or the environment variable), and a bad
flag value a ``UsageError`` naming the flag. Named sources (``[sources.NAME]``) are
:class:`SourceSpec` values; their crawl state lives in the store, never in the file.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from sitelore import __version__
from sitelore.core.config_read import DEFAULT_SEMANTIC_MODEL, DEFAULT_STORE, ENV_KEYS
from sitelore.core.errors import ConfigError, UsageError
from sitelore.core.linkstyle import LinkStyle
from sitelore.core.options import CrawlOptions, Limits

__all__ = [
    "DEFAULT_REFRESH",
    "DEFAULT_SEMANTIC_MODEL",
    "DEFAULT_STORE",
    "PROJECT_URL",
    "SOURCE_NAME_PATTERN",
    "ConvertSettings",
    "Settings",
    "SourceSpec",
    "check_user_agent",
    "default_user_agent",
    "load_settings",
    "parse_refresh",
    "settings_json_schema",
]

PROJECT_URL = "https://github.com/sitelore/sitelore"


def default_user_agent() -> str:
    """The honest User-Agent: product token, version and where to read about the bot."""
    return f"sitelore/{__version__} (+{PROJECT_URL})"


DEFAULT_REFRESH = "1d"
#: Source names: what ``sitelore add NAME`` and ``[sources.NAME]`` accept.
SOURCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

_REFRESH = re.compile(r"^([0-9]{1,6})([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_refresh(text: str) -> int:
    """Seconds in a refresh interval such as ``"30m"``, ``"6h"``, ``"1d"`` or ``"2w"``.

    Raises:
        ValueError: anything else (no unit guessing: ``"6"`` is refused).
    """
    match = _REFRESH.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not an interval like 30m, 6h, 1d or 2w")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def check_user_agent(value: str) -> str:
    """``value`` if it can be sent as a User-Agent header: printable ASCII, not blank.

    Control characters (CR, LF, tab, ...) would split or corrupt the request's headers,
    and non-ASCII text has no agreed encoding in a header.

    Raises:
        ValueError: naming the first character that is not allowed, escaped.
    """
    if not value.strip():
        raise ValueError("must not be empty")
    for position, char in enumerate(value):
        if not " " <= char <= "~":
            raise ValueError(f"must be printable ASCII; found {char!r} at position {position}")
    return value


def _list_to_tuple(value: object) -> object:
    """TOML arrays arrive as lists; the strict tuple fields take them as tuples."""
    return tuple(value) if isinstance(value, list) else value


def _check_refresh(value: object) -> object:
    if isinstance(value, str):
        parse_refresh(value)
    return value


def _check_source_url(value: object) -> object:
    if isinstance(value, str):
        parts = urlsplit(value)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) URL")
    return value


_Strings = Annotated[tuple[str, ...], BeforeValidator(_list_to_tuple)]


class SourceSpec(BaseModel):
    """One named source, ``[sources.NAME]``: a site kept fresh by ``sitelore update``.

    Crawl options left out take the crawl defaults; the operator's ``[limits]``
    still cap them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    url: Annotated[str, BeforeValidator(_check_source_url), Field(description="The start URL.")]
    max_pages: Annotated[int | None, Field(ge=1, description="Pages per crawl.")] = None
    max_depth: Annotated[int | None, Field(ge=0, description="Link hops from the start.")] = None
    same_domain: Annotated[
        bool | None, Field(description="Follow only the start host and its subdomains.")
    ] = None
    path_prefix: Annotated[
        str | None, Field(min_length=1, description="Follow only paths starting with it.")
    ] = None
    exclude: Annotated[
        _Strings, Field(description="Globs on the whole URL (on its path: /...) to skip.")
    ] = ()
    respect_robots: Annotated[bool | None, Field(description="Obey robots.txt.")] = None
    delay: Annotated[
        float | None, Field(ge=0, le=60, description="Seconds between requests to one origin.")
    ] = None
    sitemap: Annotated[bool | None, Field(description="Also seed from the site's sitemaps.")] = None
    refresh: Annotated[
        str,
        BeforeValidator(_check_refresh),
        Field(description="Re-crawl when the last good crawl is older: 30m, 6h, 1d, 2w."),
    ] = DEFAULT_REFRESH

    @property
    def refresh_seconds(self) -> int:
        """The refresh interval in seconds."""
        return parse_refresh(self.refresh)

    def crawl_options(self) -> CrawlOptions:
        """The crawl this source asks for (unset options keep the crawl defaults)."""
        values = self.model_dump(exclude={"url", "exclude", "refresh"}, exclude_none=True)
        if self.exclude:
            values["exclude_patterns"] = self.exclude
        return CrawlOptions.model_validate(values)


_SourceName = Annotated[str, Field(pattern=SOURCE_NAME_PATTERN)]


class ConvertSettings(BaseModel):
    """``[convert]``: pages convert in worker processes, each page under a time cap."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    workers: Annotated[
        int | None,
        Field(ge=1, le=256, description="Conversion worker processes (default: the cores)."),
    ] = None
    page_timeout_seconds: Annotated[
        float,
        Field(
            gt=0,
            le=600,
            description="Seconds one page may take to convert; over it the page fails "
            "(conversion-failed) and its worker is replaced.",
        ),
    ] = 10.0
    memory_mib: Annotated[
        int,
        Field(ge=0, description="Address-space bound of each worker, MiB (0: none)."),
    ] = 2048


class Settings(BaseModel):
    """Operator settings: what every request is held to, and the named sources."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    user_agent: Annotated[
        str,
        AfterValidator(check_user_agent),
        Field(min_length=1),
    ] = Field(default_factory=default_user_agent)
    allow_private: _Strings = ()
    resolve: _Strings = ()
    allowed_hosts: Annotated[
        _Strings,
        Field(description="Host names serve and mcp --transport http answer besides their bind."),
    ] = ()
    cors_origins: Annotated[
        _Strings, Field(description="Browser origins serve and mcp --transport http allow (CORS).")
    ] = ()
    store: str = DEFAULT_STORE
    links: Annotated[
        LinkStyle,
        Field(
            description="How documents' links are written when a request does not say "
            "(show, export --jsonl, REST, MCP): inline [text](url), reference [text][1] "
            "with the URLs listed at the end, or none (text only)."
        ),
    ] = "inline"
    semantic_model: Annotated[
        str,
        Field(
            min_length=1,
            description="The sentence-embedding model of semantic search (semantic extra): "
            "minilm-int8 (ONNX, the default), minilm (sentence-transformers), or a path "
            "to an .onnx file or a sentence-transformers model directory.",
        ),
    ] = DEFAULT_SEMANTIC_MODEL
    limits: Limits = Field(default_factory=Limits)
    convert: ConvertSettings = Field(default_factory=ConvertSettings)
    sources: dict[_SourceName, SourceSpec] = Field(default_factory=dict)


def settings_json_schema(model: type[BaseModel] = Settings) -> str:
    """The JSON schema of the settings file, as the text committed in ``schemas/``.

    ``scripts/gen_config_schema.py`` writes it; a test fails when the committed copy
    differs. ``model`` is for that test's own check that a new setting shows.
    """
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "sitelore settings (sitelore.toml)"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def _reason(error: Any) -> str:
    """Pydantic's message without its ``Value error, `` prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def load_settings(
    text: str | None = None,
    *,
    source: str = "settings",
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Build settings from a TOML text, an environment and flag overrides (in that order).

    All three are validated together, so a flag is held to the same rules as the file.
    ``flags`` names the flag each override came from (``{"user_agent": "--user-agent"}``).

    Raises:
        ConfigError: the TOML does not parse, or a key of the file (named with
            ``source``) or an environment variable (named) is unknown or invalid.
        UsageError: an override named in ``flags`` is invalid (named by its flag).
    """
    data: dict[str, Any] = {}
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    origin: dict[str, str] = {}
    for env_key, key in ENV_KEYS.items():
        if environ and environ.get(env_key):
            data[key] = environ[env_key]
            origin[key] = env_key
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
            if flags and key in flags:
                origin[key] = flags[key]
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]]
        where = origin.get(loc[0]) if loc else None
        if where is not None and where.startswith("--"):
            raise UsageError(f"{where}: {_reason(first)}") from exc
        if where is not None:
            raise ConfigError(f"{where} (environment): {_reason(first)}") from exc
        key = ".".join(loc) or "(root)"
        raise ConfigError(f"{source}: {key}: {_reason(first)}") from exc
