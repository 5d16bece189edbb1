"""Group commit: traces leave the request path and share transactions.

Calls hand their rows to `Ledger.begin` / `Ledger.finish` and get a future
that resolves once the row is durable. One writer task drains everything
queued into one transaction, so concurrent calls share a commit; under no
load a row is written at once. When the database is unavailable the rows
stay queued (up to `buffer_limit`) and are retried with backoff; `full`
tells the API to refuse new calls (503) rather than serve calls it cannot
record.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from llmeu.ledger.database import DatabaseUnavailable
from llmeu.ledger.records import TraceRecord
from llmeu.ledger.store import Store, trace_row

log = logging.getLogger("llmeu.ledger")

_MAX_BATCH = 2000


class _Pending:
    __slots__ = ("future", "kind", "row")

    def __init__(self, kind: str, row: tuple[Any, ...], future: asyncio.Future[None]):
        self.kind = kind
        self.row = row
        self.future = future


class Ledger:
    def __init__(self, store: Store, *, buffer_limit: int = 10_000, max_backoff: float = 2.0):
        self.store = store
        self.buffer_limit = buffer_limit
        self._max_backoff = max_backoff
        self._queue: deque[_Pending] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.healthy = True
        self.batches = 0
        self.last_batch_seconds = 0.0

    @property
    def depth(self) -> int:
        return len(self._queue)

    @property
    def full(self) -> bool:
        return len(self._queue) >= self.buffer_limit

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="llmeu-ledger-writer")

    def begin(self, record: TraceRecord) -> asyncio.Future[None]:
        """Queue the in-progress row of a call (found as `interrupted` after a crash)."""
        return self._put("begin", record)

    def finish(self, record: TraceRecord) -> asyncio.Future[None]:
        """Queue the final trace of a call; the future resolves when it is durable."""
        return self._put("finish", record)

    def _put(self, kind: str, record: TraceRecord) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(kind, trace_row(record), future))
        self._wakeup.set()
        return future

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is durable; False on timeout."""
        if not self._queue:
            return True
        futures = [p.future for p in self._queue]
        done, _ = await asyncio.wait(futures, timeout=timeout)
        return len(done) == len(futures)

    async def stop(self, timeout: float = 10.0) -> None:
        flushed = await self.flush(timeout)
        if not flushed:
            log.error("ledger: %d records could not be written before shutdown", self.depth)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        backoff = 0.05
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), _MAX_BATCH))]
                finishes = [p.row for p in batch if p.kind == "finish"]
                # A call that ended before its in-progress row was written needs only its final row.
                finished = {row[0] for row in finishes}
                begins = [p.row for p in batch if p.kind == "begin" and p.row[0] not in finished]
                started = loop.time()
                try:
                    await self.store.write_traces(begins, finishes)
                except (DatabaseUnavailable, OSError) as error:
                    self._queue.extendleft(reversed(batch))
                    if self.healthy:
                        log.error("ledger: database unavailable, %d records buffered: %s",
                                  len(self._queue), error)  # fmt: skip
                    self.healthy = False
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, self._max_backoff)
                    continue
                except Exception:  # a row the database refuses must not block the others
                    log.exception("ledger: batch refused; writing its rows one by one")
                    await self._write_one_by_one(batch)
                    continue
                if not self.healthy:
                    log.warning("ledger: database available again")
                self.healthy = True
                backoff = 0.05
                self.batches += 1
                self.last_batch_seconds = loop.time() - started
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_result(None)

    async def _write_one_by_one(self, batch: list[_Pending]) -> None:
        for pending in batch:
            rows = [pending.row]
            try:
                if pending.kind == "begin":
                    await self.store.write_traces(rows, [])
                else:
                    await self.store.write_traces([], rows)
            except Exception as error:  # this row alone is refused: report it to its call
                log.error("ledger: trace %s refused: %s", pending.row[0], error)
                if not pending.future.done():
                    pending.future.set_exception(error)
            else:
                if not pending.future.done():
                    pending.future.set_result(None)
