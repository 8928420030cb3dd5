"""Open the document store that a location string names.

::

    open_store("sitelore.db")                  # a file path (relative to the cwd)
    open_store("~/data/sitelore.db")           # ~ is expanded
    open_store("sqlite:///sitelore.db")        # SQLAlchemy form: relative path
    open_store("sqlite:////var/lib/s.db")      # four slashes: absolute path
    open_store(":memory:")                     # also "sqlite://": private, in memory
    open_store("postgresql://user@host/db")    # PostgreSQL (connects on first use)

The ``sqlite://`` forms follow SQLAlchemy, the convention Python users meet first;
the path part is percent-decoded. A new SQLite file (and its missing parent
directories) is created on first use; ``create=False`` (commands that only read)
refuses a location with no store instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote

from sitelore.adapters.store._rows import content_hash, document_id
from sitelore.adapters.store.sqlite import MEMORY, SCHEMA_VERSION, SQLiteStore
from sitelore.core.errors import ConfigError
from sitelore.core.ports import Store

__all__ = [
    "MEMORY",
    "SCHEMA_VERSION",
    "PostgresStore",
    "SQLiteStore",
    "content_hash",
    "document_id",
    "open_store",
]

if TYPE_CHECKING:
    from sitelore.adapters.store.postgres import PostgresStore

_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def __getattr__(name: str) -> object:
    # PostgresStore needs psycopg (the "scale" extra): import it only when asked for.
    if name == "PostgresStore":
        from sitelore.adapters.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(location: str, *, create: bool = True) -> Store:
    """Open (creating and migrating as needed) the store at ``location``.

    Raises ``ConfigError`` for a location this sitelore cannot serve,
    ``StoreLocationError`` (also exit 78) for a file that cannot hold a store, and
    ``NoStoreError`` (a usage error) when ``create`` is False and no SQLite store is
    there. A PostgreSQL store connects (and migrates) on first use; ``await
    store.open()`` to fail early (``create`` does not apply: the database must exist).
    """
    text = location.strip()
    scheme, sep, rest = text.partition("://")
    base = scheme.split("+", 1)[0].lower()
    if sep and base in _POSTGRES_SCHEMES:
        try:
            from sitelore.adapters.store.postgres import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                f"PostgreSQL stores need {exc.name or 'psycopg'}: pip install 'sitelore[scale]'"
            ) from exc
        # libpq knows "postgresql://" and "postgres://", not SQLAlchemy's "+driver".
        return PostgresStore(f"postgresql://{rest}")
    if not text:
        raise ConfigError("store location is empty; give a file path or a sqlite:/// URL")
    if not sep:
        return SQLiteStore(text, create=create)
    if base != "sqlite":
        raise ConfigError(f"store scheme {scheme!r} is not supported; use a path or sqlite:///")
    return SQLiteStore(_sqlite_path(text, rest), create=create)


def _sqlite_path(text: str, rest: str) -> str:
    """The SQLite path (or ``:memory:``) that the ``sqlite://`` URL ``text`` names."""
    if "?" in rest or "#" in rest:
        raise ConfigError(f"store URL {text!r}: query and fragment parts are not supported")
    if rest == "":
        return MEMORY
    if not rest.startswith("/"):
        raise ConfigError(
            f"store URL {text!r} has a host part; use sqlite:///relative or sqlite:////absolute"
        )
    path = unquote(rest[1:])
    return path or MEMORY
