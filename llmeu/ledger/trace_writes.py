"""Writing traces: in-progress rows, final rows, and the final rows' places in the hash chain.

A call's in-progress row is written when it starts (found `interrupted` after a
crash) into `open_calls`, its final row when it ends into `traces`, and the
transaction that writes the final row removes the in-progress one: a row of
`traces` is written once, final, and `open_calls` holds only the calls open now
(migration 11). `Ledger` (writer.py) hands both over in batches. A final row is
linked to the chain in the same transaction (`llmeu.ledger.chaining`): ahead,
in its own upsert, from the head this process wrote last — on PostgreSQL in one
statement, alone in its transaction — or the locked way when that head is not
the head any more.

Where in-progress rows are written beside the final ones (PostgreSQL), a final
row may commit while its call's in-progress row is still on its way; that row
is stored only if the final one is not there yet, and the rare one that slips
past (both in flight at once) is shadowed by the final row when read
(`Store.get_trace`, `Store.list_traces`) and removed at the next sweep
(`Store.mark_interrupted`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from llmeu.calls.record import TraceRecord
from llmeu.errors import DatabaseUnavailable
from llmeu.ledger.chaining import (
    LINK_COLUMNS,
    ChainMoved,
    ChainTail,
    chain_final_rows,
    link_ahead,
)
from llmeu.ledger.database import Database, Followup, Row, Statement, WriteConflict

TRACE_COLUMNS = (
    "trace_id", "key_id", "route", "request_model", "stream", "status", "instance_id",
    "received_at", "first_token_at", "finished_at", "ttft_ms", "tpot_ms", "policy_id",
    "endpoint_id", "provider", "model_used", "model_version", "inference_region",
    "sovereignty_class", "retention", "input_tokens", "output_tokens", "tokens_estimated",
    "cost_eur", "finish_reason", "http_status", "error_type", "error_code", "error_message",
    "attempts", "excluded", "prompt", "completion", "content_expires_at", "subject_sha256",
    "metadata_expires_at", "personal_data", "policy_sha256", "request_sha256", "content_sha256",
    "cache_read_tokens", "cache_creation_tokens", "ignored_features", "cache_hit",
    "cache_source", "saved_eur", "mcp_server", "mcp_tool", "bytes_in", "bytes_out",
)  # fmt: skip
_INSERT_TRACE = (
    f"INSERT INTO traces ({', '.join(TRACE_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in TRACE_COLUMNS)})"
)
_CHAINED_COLUMNS = (*TRACE_COLUMNS, *LINK_COLUMNS)
_INSERT_CHAINED = (
    f"INSERT INTO traces ({', '.join(_CHAINED_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _CHAINED_COLUMNS)})"
)
OPEN_COLUMNS = (
    "trace_id", "key_id", "route", "request_model", "stream", "status", "instance_id",
    "received_at", "policy_id", "tokens_estimated", "attempts", "excluded", "personal_data",
    "policy_sha256", "request_sha256", "subject_sha256", "ignored_features",
    "mcp_server", "mcp_tool",
)  # fmt: skip
"""The columns a call has before its upstream phase, when its in-progress row is written
(`open_row`); the others of `open_calls` stay NULL. Binding all of them cost three times as
much per row. tests/api/test_open_row.py holds every route to it."""
# An in-progress row is stored unless its call's final row is there already.
_BEGIN_OPEN = (
    f"INSERT INTO open_calls ({', '.join(OPEN_COLUMNS)}) "
    f"SELECT {', '.join('?' for _ in OPEN_COLUMNS)} "
    "WHERE NOT EXISTS (SELECT 1 FROM traces WHERE trace_id = ?)"
)
_CLOSE_OPEN = "DELETE FROM open_calls WHERE trace_id = ?"
PROGRESS_COLUMNS = (
    "first_token_at", "ttft_ms", "endpoint_id", "provider", "model_used", "model_version",
    "inference_region", "sovereignty_class", "retention", "output_tokens", "attempts",
)  # fmt: skip
"""What a progress mark writes of a stream still open (`progress_row`): where it runs and
what it delivered so far, for the `interrupted` trace a crash leaves (`Store.mark_interrupted`
copies the open row)."""
_MARK_PROGRESS = (
    f"UPDATE open_calls SET {', '.join(f'{c} = ?' for c in PROGRESS_COLUMNS)}, "
    "tokens_estimated = 1 WHERE trace_id = ?"
)
_LOCKED_ATTEMPTS = 5  # a locked write refused by a writer that took no lock (an older version)


def trace_row(record: TraceRecord) -> tuple[Any, ...]:
    """The record as a row of `traces`: the statements of `write_traces` take these."""
    return _storable((
        record.trace_id, record.key_id, record.route, record.request_model, int(record.stream),
        record.status.value, record.instance_id, record.received_at, record.first_token_at,
        record.finished_at, record.ttft_ms, record.tpot_ms, record.policy_id, record.endpoint_id,
        record.provider, record.model_used, record.model_version, record.inference_region,
        record.sovereignty_class, record.retention, record.input_tokens, record.output_tokens,
        int(record.tokens_estimated), record.cost_eur, record.finish_reason, record.http_status,
        record.error_type, record.error_code, record.error_message,
        json_text([a.as_dict() for a in record.attempts]), json_text(record.excluded),
        record.prompt, record.completion, record.content_expires_at, record.subject_sha256,
        record.metadata_expires_at,
        None if record.personal_data is None else json_text(record.personal_data),
        record.policy_sha256, record.request_sha256,
        record.content_sha256,
        record.cache_read_tokens, record.cache_creation_tokens, record.ignored_features,
        record.cache_hit, record.cache_source, record.saved_eur,
        record.mcp_server, record.mcp_tool, record.bytes_in, record.bytes_out,
    ))  # fmt: skip


def open_row(record: TraceRecord) -> tuple[Any, ...]:
    """The in-progress row of a call: `OPEN_COLUMNS` of the record, as `trace_row` has them."""
    return _storable((
        record.trace_id, record.key_id, record.route, record.request_model, int(record.stream),
        record.status.value, record.instance_id, record.received_at, record.policy_id,
        int(record.tokens_estimated), json_text([a.as_dict() for a in record.attempts]),
        json_text(record.excluded),
        None if record.personal_data is None else json_text(record.personal_data),
        record.policy_sha256, record.request_sha256, record.subject_sha256,
        record.ignored_features, record.mcp_server, record.mcp_tool,
    ))  # fmt: skip


def progress_row(record: TraceRecord, output_tokens: int) -> tuple[Any, ...]:
    """The progress mark of a stream: `PROGRESS_COLUMNS`, then the trace id. Attempts go
    without their error texts: an upstream's error may quote the prompt, and only a
    call's end decides whether the trace may keep it."""
    attempts = [dict(a.as_dict(), error=None) for a in record.attempts]
    return _storable((
        record.first_token_at, record.ttft_ms, record.endpoint_id, record.provider,
        record.model_used, record.model_version, record.inference_region,
        record.sovereignty_class, record.retention, output_tokens, json_text(attempts),
        record.trace_id,
    ))  # fmt: skip


_json = msgspec.json.Encoder()


def json_text(value: Any) -> str:
    """A JSON column's text: compact, UTF-8. Text that is not valid Unicode (a lone
    surrogate, which a client's or an upstream's string may hold) is written with escapes,
    as the stdlib writes it, rather than lose the trace."""
    try:
        return _json.encode(value).decode()
    except (msgspec.EncodeError, UnicodeError):
        return json.dumps(value)


def _storable(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Text both databases can store, so the trace is never lost: a NUL (PostgreSQL stores
    none in text) and a lone surrogate (not valid Unicode: neither database takes it) are
    written as U+FFFD. A client or an upstream may send either. Found in one pass of C:
    a NUL in any string of the row is `\\u0000` in its JSON, and a lone surrogate fails
    the encoding."""
    try:
        if b"\\u0000" not in _json.encode(row):
            return row
    except (UnicodeError, TypeError):
        pass
    return tuple(_storable_text(v) if isinstance(v, str) else v for v in row)


def _storable_text(text: str) -> str:
    text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # UTF-16 pairs what belongs together, and replaces the rest
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class TraceWrites:
    """The statements that write traces, and the chain head this process wrote last."""

    def __init__(self, db: Database, *, interrupted_settle_seconds: float = 3600.0):
        self.db = db
        self.interrupted_settle_seconds = interrupted_settle_seconds
        self.chain_tail = ChainTail()
        dialect = db.dialect
        self.begin_trace = _BEGIN_OPEN + dialect.keep_existing("trace_id")
        # A finished trace never overwrites another final status (a trace is final once),
        # nor an `interrupted` row already chained: the chain vouches for it as it is. It
        # replaces an `interrupted` row not chained yet (its process was only slow), and an
        # `in_progress` row of a ledger from before migration 11.
        replaceable = (
            "traces.status = 'in_progress' "
            "OR (traces.status = 'interrupted' AND traces.chain_seq IS NULL)"
        )
        self.finish_trace = _INSERT_TRACE + dialect.upsert(
            "trace_id", TRACE_COLUMNS, only_where=replaceable
        )
        self.close_open = _CLOSE_OPEN
        self.finish_chained = _INSERT_CHAINED + dialect.upsert(
            "trace_id", _CHAINED_COLUMNS, only_where=replaceable
        )

    def finish_chained_values(self, rows: list[tuple[Any, ...]]) -> tuple[str, list[Any]]:
        """`finish_chained` for several rows in one statement (one VALUES list), each row's
        first value through `llmeu_chain_lock`: the chain's lock is taken before any row
        is stored (PostgreSQL, `Dialect.chain_lock`)."""
        values = f"({', '.join('?' for _ in _CHAINED_COLUMNS)})"
        locked = f"(llmeu_chain_lock(?), {', '.join('?' for _ in _CHAINED_COLUMNS[1:])})"
        sql = self.finish_chained.replace(
            f"VALUES {values}", "VALUES " + ", ".join(locked for _ in rows), 1
        )
        return sql, [value for row in rows for value in row]

    def chain(self, now: float, written: dict[str, Row] | None = None) -> Followup:
        settled_before = now - self.interrupted_settle_seconds
        return chain_final_rows(self.db.dialect, settled_before, written, self.chain_tail)

    async def write(
        self,
        begins: Sequence[tuple[Any, ...]],
        finishes: Sequence[tuple[Any, ...]],
        marks: Sequence[tuple[Any, ...]] = (),
    ) -> None:
        """One transaction: in-progress rows first (rows of `open_row`), then the progress
        marks of open streams (rows of `progress_row`), then finished traces (rows of
        `trace_row`).

        Where the database has a relaxed commit (PostgreSQL), a batch without a
        finished trace does not wait for the WAL flush: an in-progress row and a
        mark exist to be found after a gateway crash, and a committed row
        survives the gateway's crash either way; only a crash of the database
        server itself within a fraction of a second could lose it. A batch with a
        finished trace always commits synchronously.
        """
        statements: list[Statement] = []
        relaxed = self.db.dialect.relaxed_commit
        if (begins or marks) and not finishes and relaxed is not None:
            statements.append((relaxed, [()]))
        if begins:
            statements.append((self.begin_trace, [(*row, row[0]) for row in begins]))
        if marks:
            statements.append((_MARK_PROGRESS, marks))
        if not finishes:
            if statements:
                await self.db.transaction(statements)
            return
        now = time.time()
        firsts: dict[str, tuple[Any, ...]] = {}
        for row in finishes:  # the first of a trace written twice is the one stored
            firsts.setdefault(row[0], row)
        closed = list(firsts)
        written = {i: dict(zip(TRACE_COLUMNS, row, strict=True)) for i, row in firsts.items()}
        settled_before = now - self.interrupted_settle_seconds
        ahead = link_ahead(list(written.values()), self.chain_tail)
        if ahead is not None:
            chained = [
                (*row, *place) for row, place in zip(firsts.values(), ahead.links, strict=True)
            ]
            try:
                d = self.db.dialect
                if d.cte_writes and not statements:
                    # The rows, the removal of their in-progress rows and the check: one
                    # statement, alone in its transaction.
                    places = ", ".join("?" * len(closed))
                    close = (f"DELETE FROM open_calls WHERE trace_id IN ({places})", closed)
                    await self.db.statement(
                        *ahead.statement(
                            settled_before, self.finish_chained_values(chained), before=close
                        )
                    )
                    self.chain_tail.head = ahead.head
                else:  # the chain's lock first, where there is one (PostgreSQL)
                    lock: list[Statement] = [(d.chain_lock, [()])] if d.chain_lock else []
                    await self.db.transaction(
                        [
                            *lock,
                            *statements,
                            (self.finish_chained, chained),
                            (self.close_open, [(i,) for i in closed]),
                        ],
                        ahead.check(settled_before),
                    )
                return
            except (ChainMoved, WriteConflict):
                self.chain_tail.head = None  # rolled back: the locked way below
        statements.append((self.finish_trace, finishes))
        statements.append((self.close_open, [(i,) for i in closed]))
        await self.write_locked(statements, now, written)

    async def write_locked(
        self, statements: list[Statement], now: float, written: dict[str, Row]
    ) -> None:
        """`statements`, which write the final rows `written` (by trace id, as written), and
        their links the locked way, in one transaction (`chain_final_rows`)."""
        for _ in range(_LOCKED_ATTEMPTS - 1):
            try:
                await self.db.transaction(statements, self.chain(now, written))
                return
            except WriteConflict:  # a writer that takes no lock (an older version) was first
                continue
        try:
            await self.db.transaction(statements, self.chain(now, written))
        except WriteConflict as error:
            raise DatabaseUnavailable(f"the chain head kept moving: {error}") from error
