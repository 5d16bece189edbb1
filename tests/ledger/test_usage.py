"""Usage: requests per status, tokens and cost, grouped and windowed, per key."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from llmeu.calls.record import CallStatus
from llmeu.ledger.api_keys import ApiKey
from llmeu.ledger.store import USAGE_GROUPS, Store
from llmeu.ledger.trace_writes import open_row
from tests.ledger.conftest import trace, write

JAN_1_2300 = datetime(2024, 1, 1, 23, 0, tzinfo=UTC).timestamp()
JAN_2_0100 = datetime(2024, 1, 2, 1, 0, tzinfo=UTC).timestamp()


def cancelled_mid_stream(**fields: Any) -> Any:
    return trace(CallStatus.CANCELLED, output_tokens=7, tokens_estimated=True,
                 cost_eur=0.000024, **fields)  # fmt: skip


@pytest.fixture
async def calls(store: Store) -> None:
    await write(
        store,
        trace(received_at=JAN_1_2300),
        trace(received_at=JAN_1_2300 + 1, key_id="kbob", model_used="other",
              endpoint_id="fakeprov-de-b", sovereignty_class="eu_resident"),
        cancelled_mid_stream(received_at=JAN_2_0100),
        trace(CallStatus.FAILED, received_at=JAN_2_0100 + 1, output_tokens=None, cost_eur=None),
        trace(CallStatus.REJECTED, received_at=JAN_2_0100 + 2, input_tokens=None,
              output_tokens=None, cost_eur=None, endpoint_id=None, model_used=None,
              sovereignty_class=None),
        trace(CallStatus.INTERRUPTED, received_at=JAN_2_0100 + 3, input_tokens=None,
              output_tokens=None, cost_eur=None),
    )  # fmt: skip
    in_flight = trace(CallStatus.IN_PROGRESS, received_at=JAN_2_0100 + 4)
    await store.write_traces([open_row(in_flight)], [])
    await store.insert_key(
        ApiKey("kbob", "bob", "hash", "eu-strict", False, 1.0, team_id="tsearch")
    )


def summary(rows: list[dict[str, Any]], group: str) -> dict[str, tuple[int, ...]]:
    """group value → (requests, completed, cancelled, failed, rejected, interrupted,
    input tokens, output tokens, estimated requests)."""
    keys = ("requests", "completed", "cancelled", "failed", "rejected", "interrupted",
            "input_tokens", "output_tokens", "estimated_requests")  # fmt: skip
    return {r[group]: tuple(r[k] for k in keys) for r in rows}


EXPECTED = {
    "day": {"2024-01-01": (2, 2, 0, 0, 0, 0, 20, 40, 0),
            "2024-01-02": (4, 0, 1, 1, 1, 1, 20, 7, 1)},
    # The model that ran; the rejected call ran none and has its own row.
    "model": {"fake": (4, 1, 1, 1, 0, 1, 30, 27, 1), "other": (1, 1, 0, 0, 0, 0, 10, 20, 0),
              "": (1, 0, 0, 0, 1, 0, 0, 0, 0)},
    "requested_model": {"fake-model": (6, 2, 1, 1, 1, 1, 40, 47, 1)},
    "endpoint": {"fakeprov-fr-a": (4, 1, 1, 1, 0, 1, 30, 27, 1),
                 "fakeprov-de-b": (1, 1, 0, 0, 0, 0, 10, 20, 0), "": (1, 0, 0, 0, 1, 0, 0, 0, 0)},
    "key": {"kalice": (5, 1, 1, 1, 1, 1, 30, 27, 1), "kbob": (1, 1, 0, 0, 0, 0, 10, 20, 0)},
    "status": {"completed": (2, 2, 0, 0, 0, 0, 20, 40, 0), "cancelled": (1, 0, 1, 0, 0, 0, 10, 7, 1),
               "failed": (1, 0, 0, 1, 0, 0, 10, 0, 0), "rejected": (1, 0, 0, 0, 1, 0, 0, 0, 0),
               "interrupted": (1, 0, 0, 0, 0, 1, 0, 0, 0)},
    "sovereignty_class": {"eu_sovereign": (4, 1, 1, 1, 0, 1, 30, 27, 1),
                          "eu_resident": (1, 1, 0, 0, 0, 0, 10, 20, 0),
                          "": (1, 0, 0, 0, 1, 0, 0, 0, 0)},
    "mcp_server": {},  # MCP tool calls only: these are model calls
    # The team of the calling key now: bob's key is in `tsearch`, alice's in none.
    "team": {"": (5, 1, 1, 1, 1, 1, 30, 27, 1), "tsearch": (1, 1, 0, 0, 0, 0, 10, 20, 0)},
}  # fmt: skip


@pytest.mark.usefixtures("calls")
@pytest.mark.parametrize("group_by", USAGE_GROUPS)
async def test_usage_groups(store: Store, group_by: str) -> None:
    rows = await store.usage(group_by=group_by, since=None, until=None, key_id=None)
    assert summary(rows, group_by) == EXPECTED[group_by]
    assert [r[group_by] for r in rows] == sorted(r[group_by] for r in rows)


@pytest.mark.usefixtures("calls")
async def test_a_cancelled_call_counts_its_tokens_and_cost_but_is_not_completed(
    store: Store,
) -> None:
    rows = await store.usage(group_by="status", since=None, until=None, key_id=None)
    cancelled = next(r for r in rows if r["status"] == "cancelled")
    assert cancelled["completed"] == 0
    assert cancelled["output_tokens"] == 7 and cancelled["estimated_requests"] == 1
    assert cancelled["cost_eur"] == pytest.approx(0.000024)


@pytest.mark.usefixtures("calls")
async def test_usage_window_and_key_scope(store: Store) -> None:
    second_day = await store.usage(group_by="day", since=JAN_2_0100, until=None, key_id=None)
    assert summary(second_day, "day") == {"2024-01-02": EXPECTED["day"]["2024-01-02"]}
    first_day = await store.usage(group_by="day", since=None, until=JAN_2_0100, key_id=None)
    assert summary(first_day, "day") == {"2024-01-01": EXPECTED["day"]["2024-01-01"]}
    bob = await store.usage(group_by="status", since=None, until=None, key_id="kbob")
    assert summary(bob, "status") == {"completed": (1, 1, 0, 0, 0, 0, 10, 20, 0)}
    assert await store.usage(group_by="key", since=None, until=None, key_id="knobody") == []


@pytest.mark.usefixtures("calls")
async def test_spend_by_key(store: Store) -> None:
    spend = await store.spend_by_key()
    assert spend["kbob"] == pytest.approx(0.00005)
    assert spend["kalice"] == pytest.approx(0.00005 + 0.000024)  # completed + cancelled


async def test_usage_by_tool_server_counts_tool_calls_only(store: Store) -> None:
    def tool_call(server: str, status: CallStatus = CallStatus.COMPLETED) -> Any:
        return trace(status, route="/mcp", request_model=f"{server}__lookup", endpoint_id=None,
                     model_used=None, input_tokens=None, output_tokens=None, cost_eur=None,
                     mcp_server=server, mcp_tool="lookup", bytes_in=120, bytes_out=480)  # fmt: skip

    await write(store, trace(), tool_call("crm"), tool_call("crm", CallStatus.FAILED),
                tool_call("docs"), tool_call("docs", CallStatus.REJECTED))  # fmt: skip
    rows = await store.usage(group_by="mcp_server", since=None, until=None, key_id=None)
    assert summary(rows, "mcp_server") == {
        "crm": (2, 1, 0, 1, 0, 0, 0, 0, 0),
        "docs": (2, 1, 0, 0, 1, 0, 0, 0, 0),
    }
    page = await store.list_traces(filters={"mcp_server": "docs"}, since=None, until=None,
                                   limit=10, cursor=None, key_id=None)  # fmt: skip
    assert {t["mcp"]["server"] for t in page.traces} == {"docs"}
    assert page.traces[0]["mcp"] == {"server": "docs", "tool": "lookup", "bytes_in": 120,
                                     "bytes_out": 480}  # fmt: skip


@pytest.mark.usefixtures("calls")
async def test_usage_and_traces_of_one_team(store: Store) -> None:
    rows = await store.usage(group_by="key", since=None, until=None, key_id=None,
                             team_id="tsearch")  # fmt: skip
    assert summary(rows, "key") == {"kbob": (1, 1, 0, 0, 0, 0, 10, 20, 0)}
    page = await store.list_traces(filters={}, since=None, until=None, limit=50, cursor=None,
                                   key_id=None, team_id="tsearch")  # fmt: skip
    assert [t["key_id"] for t in page.traces] == ["kbob"]
    other = await store.usage(group_by="key", since=None, until=None, key_id=None,
                              team_id="tnone")  # fmt: skip
    assert other == []
