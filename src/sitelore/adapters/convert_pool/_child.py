"""A conversion worker process: read requests from stdin, write replies to stdout.

Started by the pool as ``python -m sitelore.adapters.convert_pool._child``. It bounds its own
address space (``RLIMIT_AS``), builds one converter for its whole life (so the
converter's link cache serves every page it converts), says ``ready``, then answers
one request at a time until its input closes. Every outcome of a page is a reply;
only a crash, the memory bound or the pool's kill ends the process mid-page.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import signal
from collections.abc import Callable
from typing import IO, Any

from sitelore.adapters.convert_pool._frames import DEFAULT_FACTORY, Reply, frame, read_frame
from sitelore.core.errors import ConversionError, ConversionFailedError, UnsupportedContentTypeError
from sitelore.core.models import Document
from sitelore.core.sections import with_sections

__all__ = ["answer", "describe", "main", "serve"]

_MiB = 1024 * 1024
_REASON_CHARS = 300
Convert = Callable[[bytes, str, str, "str | None"], Any]


def describe(exc: BaseException) -> str:
    """One line naming an unexpected exception (its type and message, shortened)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def answer(convert: Convert, request: tuple[bytes, str, str, str | None]) -> Reply:
    """Convert one request; every exception becomes a reply."""
    body, content_type, url, charset = request
    try:
        converted = convert(body, content_type, url, charset)
        if isinstance(converted, Document):  # the store's sections, cut here off the loop
            converted = with_sections(converted)
        return ("ok", converted, False)
    except UnsupportedContentTypeError as exc:
        return ("unsupported", exc.message, False)
    except ConversionFailedError as exc:
        return ("failed", exc.reason, False)
    except ConversionError as exc:
        return ("conversion", str(exc), False)
    except MemoryError:
        return ("failed", "out of memory in the conversion worker", True)
    except RecursionError as exc:
        return ("failed", describe(exc), True)
    except Exception as exc:  # noqa: BLE001 - any exception is this page's failure
        return ("failed", describe(exc), False)


def _load(spec: str) -> Convert:
    module, _, name = spec.partition(":")
    factory = getattr(importlib.import_module(module), name)
    converter: Convert = factory()
    return converter


def _channels() -> tuple[IO[bytes], IO[bytes]]:
    """The pipes to the pool; fds 0 and 1 then point at /dev/null, so a stray print
    from a library can never corrupt a frame."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    return requests, replies


def serve(convert: Convert, requests: IO[bytes], replies: IO[bytes]) -> None:
    """Answer requests until the input ends."""
    while (request := read_frame(requests)) is not None:
        reply = answer(convert, request)
        try:
            data = frame(reply)
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle: that page's
            data = frame(("failed", f"the result could not be sent back: {describe(exc)}", True))
        replies.write(data)
        replies.flush()
        if reply[2]:
            return


def main(argv: list[str] | None = None) -> int:
    """Bound memory, build the converter, say ready, serve."""
    parser = argparse.ArgumentParser(prog="sitelore-convert-worker")
    parser.add_argument("--memory-mib", type=int, default=0)
    parser.add_argument("--factory", default=DEFAULT_FACTORY)
    args = parser.parse_args(argv)
    requests, replies = _channels()
    # Ctrl-C reaches the whole process group: the crawl decides, and stops us itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.memory_mib > 0:
        limit = args.memory_mib * _MiB
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    convert = _load(args.factory)
    replies.write(frame(("ready", os.getpid(), False)))
    replies.flush()
    serve(convert, requests, replies)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
