"""Traces: scoped reads, filters, cursor pagination, interrupted calls, content purge."""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.calls.record import CallStatus
from llmeu.ledger.store import Store
from llmeu.ledger.trace_writes import open_row, trace_row
from llmeu.ledger.views import decode_cursor, encode_cursor
from tests.ledger.conftest import trace, write


async def page_through(store: Store, limit: int, **query: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await store.list_traces(
            filters=query.get("filters", {}), since=query.get("since"), until=query.get("until"),
            limit=limit, cursor=cursor, key_id=query.get("key_id"),
        )  # fmt: skip
        pages.append([t["id"] for t in page.traces])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


async def test_cursor_pages_cover_every_trace_once_newest_first(store: Store) -> None:
    records = [trace() for _ in range(23)]
    same_time = [trace(received_at=records[10].received_at) for _ in range(4)]  # ties
    await write(store, *records, *same_time)
    expected = sorted(
        [*records, *same_time], key=lambda r: (r.received_at, r.trace_id), reverse=True
    )
    pages = await page_through(store, limit=5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 5, 2]
    assert [i for p in pages for i in p] == [r.trace_id for r in expected]


async def test_an_exact_last_page_has_no_cursor(store: Store) -> None:
    await write(store, *(trace() for _ in range(10)))
    assert [len(p) for p in await page_through(store, limit=5)] == [5, 5]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"status": "failed"}, {"failed"}),
        ({"model": "other-model"}, {"other"}),
        ({"model": "fake"}, {"completed", "failed", "bob"}),
        ({"endpoint_id": "fakeprov-de-b"}, {"other"}),
        ({"sovereignty_class": "eu_resident"}, {"other"}),
        ({"status": "completed", "model": "fake"}, {"completed", "bob"}),
    ],
    ids=["status", "request-model", "model-used", "endpoint", "class", "combined"],
)
async def test_filters(store: Store, filters: dict[str, str], expected: set[str]) -> None:
    named = {
        "completed": trace(),
        "failed": trace(CallStatus.FAILED),
        "other": trace(request_model="other-model", model_used="other",
                       endpoint_id="fakeprov-de-b", sovereignty_class="eu_resident"),
        "bob": trace(key_id="kbob"),
    }  # fmt: skip
    await write(store, *named.values())
    names = {r.trace_id: n for n, r in named.items()}
    page = await store.list_traces(
        filters=filters, since=None, until=None, limit=50, cursor=None, key_id=None
    )
    assert {names[t["id"]] for t in page.traces} == expected


async def test_time_window_is_from_inclusive_to_exclusive(store: Store) -> None:
    records = [trace(received_at=1000.0 + i) for i in range(5)]
    await write(store, *records)
    page = await store.list_traces(
        filters={}, since=1001.0, until=1003.0, limit=50, cursor=None, key_id=None
    )
    assert [t["id"] for t in page.traces] == [records[2].trace_id, records[1].trace_id]


async def test_a_key_reads_only_its_own_traces(store: Store) -> None:
    alice, bob = trace(key_id="kalice"), trace(key_id="kbob")
    await write(store, alice, bob)
    assert await store.get_trace(bob.trace_id, key_id="kalice") is None
    assert (await store.get_trace(alice.trace_id, key_id="kalice"))["id"] == alice.trace_id  # type: ignore[index]
    assert (await store.get_trace(bob.trace_id))["key_id"] == "kbob"  # type: ignore[index]
    pages = await page_through(store, limit=1, key_id="kalice")
    assert pages == [[alice.trace_id]]


async def test_a_trace_shows_timings_routing_attempts_and_tokens(store: Store) -> None:
    record = trace(first_token_at=None, output_tokens=5, tokens_estimated=True)
    record.first_token_at = record.received_at + 0.1
    record.finished_at = record.received_at + 0.5
    await write(store, record)
    view = await store.get_trace(record.trace_id)
    assert view is not None
    assert view["timings"]["ttft_ms"] == 100.0
    assert view["timings"]["tpot_ms"] == 100.0
    assert view["routing"]["endpoint_id"] == "fakeprov-fr-a"
    assert view["usage"] == {
        "input_tokens": 10, "output_tokens": 5, "estimated": True, "cost_eur": 0.00005,
    }  # fmt: skip
    assert view["content"] == {"stored": False, "prompt": None, "completion": None,
                               "expires_at": None}  # fmt: skip


def test_cursors_round_trip_and_foreign_ones_are_refused() -> None:
    assert decode_cursor(encode_cursor(1700000000.123456, "trc_x")) == (1700000000.123456, "trc_x")
    for bad in ("", "not-base64!", "bnVsbA", "WzFd"):
        with pytest.raises(ValueError, match="invalid cursor"):
            decode_cursor(bad)


async def test_calls_of_stopped_processes_become_interrupted(store: Store) -> None:
    await store.register_instance("gw_live", 100.0)
    await store.register_instance("gw_dead", 100.0)
    await store.heartbeat("gw_live", 200.0)
    live = trace(CallStatus.IN_PROGRESS, instance_id="gw_live")
    dead = trace(CallStatus.IN_PROGRESS, instance_id="gw_dead")
    unknown = trace(CallStatus.IN_PROGRESS, instance_id="gw_never_registered")
    done = trace(CallStatus.COMPLETED, instance_id="gw_dead")
    await store.write_traces([open_row(r) for r in (live, dead, unknown)], [trace_row(done)])
    assert await store.mark_interrupted(live_after=150.0, now=210.0) == 2
    status = {r.trace_id: (await store.get_trace(r.trace_id))["status"]  # type: ignore[index]
              for r in (live, dead, unknown, done)}  # fmt: skip
    assert status == {live.trace_id: "in_progress", dead.trace_id: "interrupted",
                      unknown.trace_id: "interrupted", done.trace_id: "completed"}  # fmt: skip
    view = await store.get_trace(dead.trace_id)
    assert view is not None and view["error"]["code"] == "gateway_interrupted"
    assert view["timings"]["finished_at"] == 210.0
    assert await store.live_instances(150.0) == {"gw_live"}
    assert await store.mark_interrupted(live_after=150.0, now=220.0) == 0


async def test_a_late_final_trace_replaces_interrupted(store: Store) -> None:
    """A process judged stopped that was only slow still records how its call ended."""
    record = trace(CallStatus.IN_PROGRESS, instance_id="gw_slow")
    await store.write_traces([open_row(record)], [])
    await store.mark_interrupted(live_after=1e12, now=1e9)
    record.status = CallStatus.COMPLETED
    await write(store, record)
    assert (await store.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]
    record.status = CallStatus.FAILED
    await write(store, record)  # a trace is final once
    assert (await store.get_trace(record.trace_id))["status"] == "completed"  # type: ignore[index]


async def test_purge_drops_expired_content_and_keeps_metadata(store: Store) -> None:
    expired = trace(prompt='[{"role":"user","content":"hi"}]', completion="hello",
                    content_expires_at=500.0)  # fmt: skip
    kept = trace(prompt='[{"role":"user","content":"yo"}]', completion="hey",
                 content_expires_at=2000.0)  # fmt: skip
    never = trace()
    await write(store, expired, kept, never)
    assert await store.purge_content(now=1000.0) == 1
    view = await store.get_trace(expired.trace_id)
    assert view is not None
    assert view["content"] == {"stored": False, "prompt": None, "completion": None,
                               "expires_at": None}  # fmt: skip
    assert view["status"] == "completed" and view["usage"]["output_tokens"] == 20
    kept_view = await store.get_trace(kept.trace_id)
    assert kept_view is not None and kept_view["content"]["completion"] == "hey"
    assert kept_view["content"]["prompt"] == [{"role": "user", "content": "yo"}]
    assert await store.purge_content(now=1000.0) == 0
    assert await store.purge_content(now=2000.0) == 1


async def test_a_process_swept_while_stalled_registers_again_at_its_next_heartbeat(
    store: Store,
) -> None:
    await store.register_instance("gw_stalled", 100.0)
    await store.register_instance("gw_other", 100.0)
    await store.heartbeat("gw_other", 300.0)
    await store.mark_interrupted(live_after=250.0, now=300.0)  # gw_stalled missed its beats
    assert await store.live_instances(0.0) == {"gw_other"}
    await store.heartbeat("gw_stalled", 310.0)
    assert await store.live_instances(250.0) == {"gw_other", "gw_stalled"}
    running = trace(CallStatus.IN_PROGRESS, instance_id="gw_stalled")
    await store.write_traces([open_row(running)], [])
    assert await store.mark_interrupted(live_after=250.0, now=320.0) == 0


async def test_none_is_stored_as_sql_null(store: Store) -> None:
    """The SQLite driver binds None through an adapter of its own (`llmeu.ledger.sqlite`):
    what lands is still SQL NULL, on either database."""
    record = trace(CallStatus.FAILED, error_type=None, prompt=None)
    await write(store, record)
    rows = await store.db.fetch(
        "SELECT COUNT(*) AS n FROM traces WHERE trace_id = ? AND prompt IS NULL "
        "AND error_type IS NULL AND completion IS NULL",
        (record.trace_id,),
    )
    assert rows == [{"n": 1}]
