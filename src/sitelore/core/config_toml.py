"""Write one ``[sources.NAME]`` table into a settings file's text, leaving the rest as it was.

``sitelore add`` appends the new table to the end of the file, so the operator's
comments, order and formatting stay untouched (a TOML writer that round-trips the
whole document would drop comments). Only the values a source may hold are written
(strings, integers, floats, booleans, lists of strings), with TOML basic-string
escapes. The result is checked by parsing it again before anyone writes it. Pure:
text in, text out.
"""

from __future__ import annotations

import math
import re

from sitelore.core.config import Settings, SourceSpec, load_settings
from sitelore.core.errors import ConfigError, UsageError

__all__ = ["append_source", "source_table", "toml_key", "toml_value"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n"}
_SHORT_ESCAPES |= {"\f": "\\f", "\r": "\\r"}


def _escape(char: str) -> str:
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\u{ord(char):04X}"
    return char


def _string(text: str) -> str:
    return '"' + "".join(_escape(char) for char in text) + '"'


def toml_key(key: str) -> str:
    """A key as TOML writes it: bare when it can be, else a quoted basic string."""
    return key if _BARE_KEY.match(key) else _string(key)


def toml_value(value: object) -> str:
    """One value as TOML: str, bool, int, finite float, or a list/tuple of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML has no finite form for {value!r}")
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")


def source_table(name: str, spec: SourceSpec) -> str:
    """The ``[sources.NAME]`` table for ``spec``: ``url``, then each value that was set."""
    lines = [f"[sources.{toml_key(name)}]", f"url = {toml_value(spec.url)}"]
    values = spec.model_dump(exclude_unset=True, exclude_none=True, exclude={"url"})
    lines += [f"{toml_key(key)} = {toml_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def append_source(text: str, name: str, spec: SourceSpec, *, source: str) -> tuple[str, Settings]:
    """``text`` with the table for ``name`` appended, and the settings it now holds.

    Raises:
        ConfigError: ``text`` is not valid settings.
        UsageError: ``text`` already defines a source called ``name``.
    """
    current = load_settings(text, source=source)
    if name in current.sources:
        raise UsageError(f"{source}: sources.{name} already exists; edit it there")
    separator = (
        "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    )
    updated = text + separator + source_table(name, spec)
    settings = load_settings(updated, source=source)
    if settings.sources.get(name) != spec:
        raise ConfigError(f"{source}: sources.{name} did not read back as written")
    return updated, settings
