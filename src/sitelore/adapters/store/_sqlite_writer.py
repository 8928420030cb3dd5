"""The SQLite store's writer thread: writes off the event loop, several per commit.

:class:`~sitelore.adapters.store.sqlite.SQLiteStore` hands each write (an upsert with its
sections, a removal flag, a job record...) to one :class:`Writer` as a function of a
connection, and awaits its result. The writer thread has its own connection and
runs whatever writes are waiting as one transaction (a group commit, at most
:data:`MAX_BATCH`), each write inside its own savepoint (a write alone in its
transaction needs none: FTS5 writes its pending terms out at every savepoint):

* **Nothing half-written.** A write that fails is rolled back to its savepoint (its
  document and its sections, or neither) and only that write's caller gets the
  error; the others of its batch still commit. A crash before ``COMMIT`` loses the
  whole batch: no write is visible before its transaction commits.
* **A write returns once committed.** Each caller's future is settled after
  ``COMMIT`` (or the failure), on that caller's event loop; what a caller reads
  afterwards on the store's own connection (WAL) includes it.
* **Checkpoints off the commit path.** The writer's connection never checkpoints;
  a second thread with its own connection copies the WAL into the file (a PASSIVE
  checkpoint, which writers do not wait for) at most every :data:`CHECKPOINT_SECONDS`
  while commits come in, so no commit waits on a checkpoint's disk syncs.
* **Why a thread.** Tokenising a page's sections into FTS5 costs about a millisecond
  of CPU, inside SQLite, which lets go of the GIL while it works: on the loop it
  delayed every other page's fetch; here it overlaps them. One transaction for the
  pages that queued up meanwhile also spares FTS5 a segment and the WAL a commit
  per page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CHECKPOINT_SECONDS", "MAX_BATCH", "Work", "Writer"]

log = logging.getLogger(__name__)

#: A write: runs on the writer's connection inside an open transaction; its result
#: goes to the caller. It never begins, commits or rolls back itself.
Work = Callable[[sqlite3.Connection], Any]
#: The most writes in one transaction.
MAX_BATCH = 64
#: The least time between two background checkpoints while writes come in.
CHECKPOINT_SECONDS = 0.5


class _Job:
    """One write, the caller's loop and future, and what became of it."""

    __slots__ = ("action", "error", "future", "loop", "result", "work")

    def __init__(
        self, action: str, work: Work, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]
    ) -> None:
        self.action = action
        self.work = work
        self.loop = loop
        self.future = future
        self.result: Any = None
        self.error: BaseException | None = None

    def settle(self) -> None:
        """Hand the result (or error) to the caller's loop; a closed loop has left."""
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            self.loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if self.future.done():  # the caller was cancelled (its write still counts)
            return
        if self.error is not None:
            self.future.set_exception(self.error)
        else:
            self.future.set_result(self.result)


class Writer:
    """One thread with its own connection, committing the writes given to it in batches.

    Args:
        connect: opens the writer's connection (called in the writer thread).
        failure: the error a caller sees for an exception of its write (the store's
            ``StoreError`` naming the action for SQLite errors); other exceptions
            pass through as themselves.
        name: the thread's name.
        checkpoint: opens the checkpointer's connection; None leaves checkpoints to
            SQLite's automatic ones, on the writer's connection.
    """

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        failure: Callable[[str, BaseException], BaseException],
        *,
        name: str = "sitelore-sqlite-writer",
        checkpoint: Callable[[], sqlite3.Connection] | None = None,
    ) -> None:
        self._connect = connect
        self._failure = failure
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._checkpoints = _Checkpointer(checkpoint) if checkpoint is not None else None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    async def write(self, action: str, work: Work) -> Any:
        """Run ``work`` in the writer's next transaction; its result once committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(_Job(action, work, loop, future))
        return await future

    def close(self) -> None:
        """Finish the writes already given, then stop the thread and close its connection."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._checkpoints is not None:
            self._checkpoints.close()

    # -- the writer thread -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                jobs, stop = self._gather(first)
                self._batch(jobs)
                for job in jobs:
                    job.settle()
                if stop:
                    return
        finally:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()

    def _gather(self, first: _Job) -> tuple[list[_Job], bool]:
        """``first`` and the writes already waiting (up to the batch size); whether to stop."""
        jobs = [first]
        while len(jobs) < MAX_BATCH:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            jobs.append(job)
        return jobs, False

    def _fail(self, jobs: list[_Job], exc: BaseException) -> None:
        for job in jobs:
            job.error = self._failure(job.action, exc)

    def _batch(self, jobs: list[_Job]) -> None:
        """Run ``jobs`` in as few transactions as their failures allow."""
        try:
            if self._conn is None:
                self._conn = self._connect()
                if self._checkpoints is not None:
                    self._conn.execute("PRAGMA wal_autocheckpoint = 0")
        except BaseException as exc:  # noqa: BLE001 - every caller gets its error
            self._fail(jobs, exc)
            return
        conn = self._conn
        pending = jobs
        while pending:
            pending = self._transaction(conn, pending)

    def _transaction(self, conn: sqlite3.Connection, jobs: list[_Job]) -> list[_Job]:
        """One transaction over ``jobs``; the jobs left for another when it was lost."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:  # noqa: BLE001 - locked too long, disk I/O...
            self._fail(jobs, exc)
            return []
        done: list[_Job] = []
        alone = len(jobs) == 1  # its transaction is its savepoint (FTS5 flushes at each)
        for index, job in enumerate(jobs):
            try:
                if not alone:
                    conn.execute("SAVEPOINT page")
                job.result = job.work(conn)
                if not alone:
                    conn.execute("RELEASE page")
                done.append(job)
                continue
            except BaseException as exc:  # noqa: BLE001 - that write's failure, not the batch's
                job.error = self._failure(job.action, exc)
                lost = exc
            if alone:
                _rollback(conn)
                return []
            if self._undo(conn):
                continue
            # SQLite rolled the whole transaction back (I/O error, disk full): the
            # writes done so far in it are lost too; the rest get a new transaction.
            log.warning("a store transaction was rolled back by SQLite: %s", lost)
            self._fail(done, lost)
            return jobs[index + 1 :]
        try:
            conn.execute("COMMIT")
        except BaseException as exc:  # noqa: BLE001 - none of the batch was written
            _rollback(conn)
            self._fail(done, exc)
        if self._checkpoints is not None:
            self._checkpoints.wake()
        return []

    @staticmethod
    def _undo(conn: sqlite3.Connection) -> bool:
        """Roll back to the failed write's savepoint; False when the transaction is gone."""
        if not conn.in_transaction:
            return False
        try:
            conn.execute("ROLLBACK TO page")
            conn.execute("RELEASE page")
        except sqlite3.Error:
            _rollback(conn)
            return False
        return True


def _rollback(conn: sqlite3.Connection) -> None:
    """End the open transaction, if SQLite has not ended it already, writing nothing."""
    with contextlib.suppress(sqlite3.Error):
        if conn.in_transaction:
            conn.execute("ROLLBACK")


class _Checkpointer:
    """A thread that checkpoints the WAL on its own connection when woken, at most every
    :data:`CHECKPOINT_SECONDS`; the last connection to close does the final one."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._woken = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="sitelore-sqlite-checkpointer", daemon=True
        )
        self._thread.start()

    def wake(self) -> None:
        """Something was committed: checkpoint soon."""
        self._woken.set()

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._stopping.set()
        self._woken.set()
        self._thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while self._woken.wait() and not self._stopping.is_set():
                self._woken.clear()
                try:
                    conn = conn or self._connect()
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # another process checkpointing, a full disk
                    log.debug("background checkpoint failed: %s", exc)
                self._stopping.wait(CHECKPOINT_SECONDS)
        finally:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
