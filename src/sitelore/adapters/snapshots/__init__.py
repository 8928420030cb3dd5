"""Snapshots of the fetch path (warcio): capture every exchange as WARC 1.1, replay it offline.

Three modes (``ports.Snapshots``), chosen per crawl:

* ``live`` (:class:`LiveSnapshots`): the network, nothing recorded.
* ``capture`` (:class:`CaptureSnapshots`): the network, and every exchange the
  fetcher completes (each redirect hop and each retried attempt) is written as a
  WARC 1.1 response record and request record, gzip per record, into a new file of
  an archive directory, and indexed by page id and URL beside it.
* ``replay`` (:class:`ReplaySnapshots`): responses come from the archive only.

Page ids are ``models.page_id(seed_id, url)``: ``quote(seed_id, safe="") + "::" +
url``, where ``url`` is the URL the crawl asked the fetcher for and ``seed_id``
names the crawl (by default its normalised start URL).

Never opens a socket or creates an HTTP session in replay; never changes what the
live fetcher returns in capture (it only observes); never stores a caller's
credentials in a request record. warcio is imported here and nowhere else.

::

    async with runtime.open_crawl(url, options, snapshots=CaptureSnapshots(Path("arc"))):
        ...
    # later, with no network at all:
    async with runtime.open_crawl(url, options, snapshots=runtime.snapshots(replay="arc")):
        ...
"""

from __future__ import annotations

from sitelore.adapters.snapshots._archive import WARC_SUFFIX, CaptureWriter, WarcReader
from sitelore.adapters.snapshots._export import WarcExport, export_warc
from sitelore.adapters.snapshots._index import INDEX_NAME, CaptureIndex
from sitelore.adapters.snapshots._modes import CaptureSnapshots, LiveSnapshots, ReplaySnapshots
from sitelore.adapters.snapshots._records import DECODED_FIELD, PAGE_ID_FIELD, payload_digest

__all__ = [
    "DECODED_FIELD",
    "INDEX_NAME",
    "PAGE_ID_FIELD",
    "WARC_SUFFIX",
    "CaptureIndex",
    "CaptureSnapshots",
    "CaptureWriter",
    "LiveSnapshots",
    "ReplaySnapshots",
    "WarcExport",
    "WarcReader",
    "export_warc",
    "payload_digest",
]
