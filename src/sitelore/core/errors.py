"""The exception tree: every error sitelore raises, under one root, with its exit code.

Errors are a leaf module so that every layer can import them without import loops.
Per-page failures carry an :class:`ErrorKind` so a crawl can record them as values
(``PageError``) instead of aborting; whole-run problems (bad options, a refused start
URL, a bad settings file) surface to the user with an exit code.

::

    SiteloreError                 exit 70 (internal)
    ├── UsageError                exit 2: the user must fix the command or request
    │   ├── InvalidURLError       unparsable URL, scheme other than http(s), credentials
    │   ├── BlockedURLError       refused by the address guard (.address, .reason)
    │   ├── RobotsRefusedError    start URL refused by robots.txt (or robots.txt 5xx)
    │   ├── NotFoundError         no document (or crawl job) with that id (HTTP 404)
    │   └── NoStoreError          a read-only command found no store where it looked
    ├── ConfigError               exit 78: bad settings file, environment or flags
    │   └── ArchiveError          a snapshot archive is missing, unreadable or unwritable
    ├── FetchError                one request failed (.url, .kind, .status): a page outcome
    │   ├── FetchTimeoutError
    │   ├── ResponseTooLargeError
    │   ├── TooManyRedirectsError
    │   ├── HTTPStatusError
    │   ├── NetworkError
    │   ├── UnsupportedContentTypeError
    │   ├── RobotsDeniedError     a redirect hop or final URL refused by robots.txt
    │   └── NoSnapshotError
    ├── ConversionError           a body could not be converted: a page outcome
    │   └── ConversionFailedError the converter raised, crashed or ran over its cap
    ├── BusyError                 too many crawls running at once (HTTP 429)
    ├── FrontierError             the shared Redis frontier failed mid-crawl
    └── StoreError                the store failed while in use (disk full, locked)
        ├── PageStoreError        ... while storing one page of a crawl: a page outcome
        └── StoreLocationError    exit 78: the store location is unusable (not SQLite, ...)
            └── SchemaVersionError  the store is from a newer sitelore

A per-URL error's text (``str``: what a page outcome, a log line or the CLI shows) has
its control characters written as ``\\xNN`` (``core.printable``): it may quote a server.

Fetch and conversion errors are values: a crawl (``fetch`` too) records them as page
outcomes and the command still exits 0. One that escapes a command is a bug (exit 70).
An error raised inside a task group arrives wrapped in an ``ExceptionGroup``; the
edges report :func:`first_sitelore_error` of it as itself.
"""

from __future__ import annotations

import enum

from sitelore.core.printable import printable

__all__ = [
    "EXIT_CONFIG",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "ArchiveError",
    "BlockedURLError",
    "BusyError",
    "ConfigError",
    "ConversionError",
    "ConversionFailedError",
    "ErrorKind",
    "FetchError",
    "FetchTimeoutError",
    "FrontierError",
    "HTTPStatusError",
    "InvalidURLError",
    "NetworkError",
    "NoSnapshotError",
    "NoStoreError",
    "NotFoundError",
    "PageStoreError",
    "ResponseTooLargeError",
    "RobotsDeniedError",
    "RobotsRefusedError",
    "SchemaVersionError",
    "SiteloreError",
    "StoreError",
    "StoreLocationError",
    "TooManyRedirectsError",
    "UnsupportedContentTypeError",
    "UsageError",
    "first_sitelore_error",
]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_CONFIG = 78


class ErrorKind(enum.StrEnum):
    """Why one page failed; the pinned values of a page's ``error.kind``."""

    NETWORK = "network"
    TIMEOUT = "timeout"
    HTTP_STATUS = "http-status"
    TOO_LARGE = "too-large"
    BLOCKED = "blocked"
    ROBOTS_DENIED = "robots-denied"
    UNSUPPORTED_CONTENT_TYPE = "unsupported-content-type"
    TOO_MANY_REDIRECTS = "too-many-redirects"
    NO_SNAPSHOT = "no-snapshot"
    INVALID_URL = "invalid-url"
    INVALID_CONFIG = "invalid-config"
    CONVERSION_FAILED = "conversion-failed"
    STORE_FAILED = "store-failed"


class SiteloreError(Exception):
    """Root of every error sitelore raises on purpose."""

    exit_code: int = EXIT_INTERNAL
    #: The per-page kind this error maps to when it happens to one page of a crawl.
    kind: ErrorKind | None = None


class UsageError(SiteloreError):
    """The command or request is wrong; the user must change it (exit 2, HTTP 400)."""

    exit_code = EXIT_USAGE


class _URLReasonError(SiteloreError):
    """An error about one URL, for a reason: both kept, the message made by ``_message``."""

    _message = "{url}: {reason}"

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(printable(self._message.format(url=url, reason=reason)))


class InvalidURLError(_URLReasonError, UsageError):
    """A URL that cannot be fetched at all: unparsable, wrong scheme, credentials.

    The message never repeats credentials: ``url`` is the redacted form.
    """

    kind = ErrorKind.INVALID_URL


class BlockedURLError(_URLReasonError, UsageError):
    """The address guard refused a URL or one of the addresses its host resolved to."""

    kind = ErrorKind.BLOCKED
    _message = "{url}: blocked: {reason}"

    def __init__(self, url: str, reason: str, address: str | None = None) -> None:
        self.address = address
        super().__init__(url, reason)


class RobotsRefusedError(UsageError):
    """The start URL of a crawl is refused by robots.txt (or robots.txt answered 5xx)."""

    kind = ErrorKind.ROBOTS_DENIED

    def __init__(self, url: str, robots_url: str, reason: str) -> None:
        self.url = url
        self.robots_url = robots_url
        self.reason = reason
        super().__init__(
            f"{url}: {reason} ({robots_url}); pass --no-robots "
            "(respect_robots=false) to crawl anyway"
        )


class NotFoundError(UsageError):
    """No document, or no crawl job, has the id asked for."""


class NoStoreError(UsageError):
    """A command that only reads found no store at the location (it never creates one)."""

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(f"{location}: no sitelore store here (crawl or fetch creates one)")


class ConfigError(SiteloreError):
    """The settings (file, environment or flags) are invalid (exit 78)."""

    exit_code = EXIT_CONFIG


class ArchiveError(ConfigError):
    """A snapshot archive (WARC files and their index) is missing, unreadable or unwritable.

    A crawl that cannot open its archive ends as one page outcome of kind
    ``invalid-config`` instead of raising; other commands exit 78 with it.
    """

    kind = ErrorKind.INVALID_CONFIG


class FetchError(SiteloreError):
    """One request failed; a crawl (and ``fetch``) records it as that page's outcome.

    Never meant to leave a command: one that does is a bug, reported as internal (70).
    """

    kind: ErrorKind = ErrorKind.NETWORK

    def __init__(self, url: str, message: str, *, status: int | None = None) -> None:
        self.url = url
        self.message = printable(message)
        self.status = status
        super().__init__(printable(f"{url}: {message}"))


class NetworkError(FetchError):
    """Connection refused, reset, DNS failure, TLS failure."""

    kind = ErrorKind.NETWORK


class FetchTimeoutError(FetchError):
    """Connect, first-byte, idle or total timeout."""

    kind = ErrorKind.TIMEOUT


class ResponseTooLargeError(FetchError):
    """The (decompressed) body went over its cap."""

    kind = ErrorKind.TOO_LARGE


class TooManyRedirectsError(FetchError):
    """More redirect hops than allowed, or a redirect loop."""

    kind = ErrorKind.TOO_MANY_REDIRECTS


class HTTPStatusError(FetchError):
    """The final response has a status that carries no document (4xx, 5xx, bare 3xx)."""

    kind = ErrorKind.HTTP_STATUS


class UnsupportedContentTypeError(FetchError):
    """The response is of a content type sitelore does not convert."""

    kind = ErrorKind.UNSUPPORTED_CONTENT_TYPE


class RobotsDeniedError(FetchError):
    """A redirect hop or the final URL of a page is disallowed by robots.txt."""

    kind = ErrorKind.ROBOTS_DENIED


class NoSnapshotError(FetchError):
    """Replay mode: the archive holds no record for this URL."""

    kind = ErrorKind.NO_SNAPSHOT


class ConversionError(SiteloreError):
    """A body could not be turned into a document (a broken PDF, say).

    As a page outcome it is reported with the kind ``unsupported-content-type``; like
    :class:`FetchError` it never leaves a command on purpose (70 if it does).
    """

    kind = ErrorKind.UNSUPPORTED_CONTENT_TYPE


class ConversionFailedError(_URLReasonError, ConversionError):
    """Converting one page failed: the converter raised, its worker died, or the page
    ran over the conversion time cap (the message names the cap). A page outcome."""

    kind = ErrorKind.CONVERSION_FAILED
    _message = "{url}: conversion failed: {reason}"


class BusyError(SiteloreError):
    """The server already runs as many crawls as the operator allows; try again later."""


class FrontierError(SiteloreError):
    """The shared crawl frontier (Redis) failed mid-crawl; unreachable at start is a ConfigError."""


class StoreError(SiteloreError):
    """The document store failed while in use (disk full, locked too long): internal (70).

    Raised while storing one page of a crawl, it becomes that page's
    :class:`PageStoreError` (``store-failed``) and the crawl goes on.
    """


class PageStoreError(_URLReasonError, StoreError):
    """Storing (or looking up) one page of a crawl failed: that page's outcome."""

    kind = ErrorKind.STORE_FAILED
    _message = "{url}: storing failed: {reason}"


class StoreLocationError(StoreError):
    """The store location cannot be used: not an SQLite database, a directory, unwritable.

    The operator must point ``--db`` / ``store`` elsewhere: a configuration error (78).
    """

    exit_code = EXIT_CONFIG


class SchemaVersionError(StoreLocationError):
    """The store's schema is newer than this sitelore understands (upgrade sitelore)."""


def first_sitelore_error(exc: BaseException) -> SiteloreError | None:
    """``exc`` if it is a :class:`SiteloreError`, else the first one among its leaves.

    A task group wraps what its tasks raise in an ``ExceptionGroup`` (nested groups
    too); the edges report the first sitelore error inside as itself. None when
    there is none (a real crash).
    """
    if isinstance(exc, SiteloreError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_sitelore_error(inner)
            if found is not None:
                return found
    return None
