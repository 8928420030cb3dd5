"""The settings a read command needs (store, link style, search model), without pydantic.

``search``, ``list`` and ``show`` need three settings. Building the full
:class:`~sitelore.core.config.Settings` model costs more start-up than the command's own
work, so :func:`read_settings` answers from the settings text and the environment
directly, but only when that is certain to give what full validation gives: a file
holding nothing but these keys with plainly valid values, and no environment
variable that full validation would check. Anything else returns None, and the
caller validates in full (which reports a bad file, variable or flag as always).
Pure: the caller reads the file and passes the environment in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from sitelore.core.linkstyle import LINK_STYLES, LinkStyle

__all__ = [
    "DEFAULT_SEMANTIC_MODEL",
    "DEFAULT_STORE",
    "ENV_KEYS",
    "ReadSettings",
    "read_settings",
]

DEFAULT_STORE = "sitelore.db"
#: The sentence-embedding model semantic search uses unless the settings name another.
DEFAULT_SEMANTIC_MODEL = "minilm-int8"

#: Environment variables the settings read, and the key each sets.
ENV_KEYS = {
    "SITELORE_DB": "store",
    "SITELORE_USER_AGENT": "user_agent",
}


@dataclasses.dataclass(frozen=True, slots=True)
class ReadSettings:
    """The settings of a command that only reads the store."""

    store: str = DEFAULT_STORE
    links: LinkStyle = "inline"
    semantic_model: str = DEFAULT_SEMANTIC_MODEL


def _is_link_style(value: object) -> bool:
    return any(value == style for style in LINK_STYLES)


#: The keys answered here, each with the test full validation would pass it by.
_PLAIN_KEYS: dict[str, Callable[[object], bool]] = {
    "store": lambda value: isinstance(value, str),
    "links": _is_link_style,
    "semantic_model": lambda value: isinstance(value, str) and bool(value),
}


def read_settings(
    text: str | None, *, environ: Mapping[str, str], store: str | None = None
) -> ReadSettings | None:
    """The read settings of a settings text, environment and ``--db`` flag (in that order).

    Returns None unless the answer is certainly what full validation would give:
    the text parses, holds only ``store``, ``links`` and ``semantic_model`` with valid
    values, and of the settings' environment variables only ``SITELORE_DB`` is set.

    >>> read_settings('links = "none"', environ={"SITELORE_DB": "a.db"}, store="b.db")
    ReadSettings(store='b.db', links='none', semantic_model='minilm-int8')
    >>> read_settings("[limits]\\nmax_pages = 5", environ={}) is None
    True
    """
    data: dict[str, object] = {}
    if text is not None:
        import tomllib  # only when there is a file: most read commands run without one

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
    for env_key, key in ENV_KEYS.items():
        if environ.get(env_key):
            if key != "store":
                return None
            data[key] = environ[env_key]
    if store is not None:
        data["store"] = store
    for key, value in data.items():
        plain = _PLAIN_KEYS.get(key)
        if plain is None or not plain(value):
            return None
    links = next(style for style in LINK_STYLES if style == data.get("links", "inline"))
    return ReadSettings(
        store=str(data.get("store", DEFAULT_STORE)),
        links=links,
        semantic_model=str(data.get("semantic_model", DEFAULT_SEMANTIC_MODEL)),
    )
