"""Validated operator settings: hard caps, private-address opt-ins, user agent, store.

Settings come from defaults < settings file < environment < flags. This module is
pure: :func:`load_settings` takes the file's text and an environment mapping that the
edges read and pass in. Loose values are never guessed: a wrong type is a
``ConfigError`` naming the key and the file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sitelore import __version__
from sitelore.errors import ConfigError
from sitelore.models import Limits

__all__ = ["DEFAULT_STORE", "PROJECT_URL", "Settings", "default_user_agent", "load_settings"]

PROJECT_URL = "https://github.com/sitelore/sitelore"
DEFAULT_STORE = "sitelore.db"


def default_user_agent() -> str:
    """The honest User-Agent: product token, version and where to read about the bot."""
    return f"sitelore/{__version__} (+{PROJECT_URL})"


class Settings(BaseModel):
    """Operator settings: what every request is held to."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    user_agent: Annotated[str, Field(min_length=1)] = Field(default_factory=default_user_agent)
    allow_private: tuple[str, ...] = ()
    resolve: tuple[str, ...] = ()
    store: str = DEFAULT_STORE
    limits: Limits = Field(default_factory=Limits)


_ENV_KEYS = {
    "SITELORE_DB": "store",
    "SITELORE_USER_AGENT": "user_agent",
}


def _errors_to_message(exc: ValidationError, source: str) -> str:
    first = exc.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "(root)"
    return f"{source}: {key}: {first['msg']}"


def load_settings(
    text: str | None = None,
    *,
    source: str = "settings",
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build settings from a TOML text, an environment and flag overrides (in that order).

    Raises:
        ConfigError: the TOML does not parse, or a key is unknown or of the wrong type.
    """
    data: dict[str, Any] = {}
    if text is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    data.pop("sources", None)  # named sources are read by the sources feature
    for env_key, key in _ENV_KEYS.items():
        if environ and environ.get(env_key):
            data[key] = environ[env_key]
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    for key in ("allow_private", "resolve"):
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_errors_to_message(exc, source)) from exc
