"""A call's in-progress row holds `OPEN_COLUMNS` only (`llmeu.ledger.trace_writes`): on
every route, nothing else of the trace may be known yet when that row is written, or an
`interrupted` trace would lose it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from llmeu.api.app import App
from llmeu.calls.record import TraceRecord
from llmeu.ledger.trace_writes import OPEN_COLUMNS, TRACE_COLUMNS, trace_row
from llmeu.ledger.writer import Ledger

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "user": "u-1"}
MESSAGES = {
    "model": "fake-model",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "hi"}],
    "metadata": {"user_id": "u-2"},
}
CALLS: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
    "chat": ("/v1/chat/completions", CHAT, {}),
    "chat stream": ("/v1/chat/completions", {**CHAT, "stream": True}, {}),
    "responses": ("/v1/responses", {"model": "fake-model", "input": "hi", "user": "u-3"}, {}),
    "responses stream": (
        "/v1/responses", {"model": "fake-model", "input": "hi", "stream": True}, {},
    ),
    "messages": ("/v1/messages", MESSAGES, {"anthropic-beta": "some-beta-2025-01-01"}),
    "messages stream": ("/v1/messages", {**MESSAGES, "stream": True}, {}),
    "embeddings": ("/v1/embeddings", {"model": "fake-model", "input": "hi", "user": "u-4"}, {}),
}  # fmt: skip


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_nothing_outside_the_open_columns_is_known_when_a_call_begins(
    app: App,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    call: tuple[str, dict[str, Any], dict[str, str]],
) -> None:
    began: list[dict[str, Any]] = []
    begin = Ledger.begin

    def recording(
        ledger: Ledger, record: TraceRecord, *, awaited: bool = False
    ) -> asyncio.Future[None]:
        began.append(dict(zip(TRACE_COLUMNS, trace_row(record), strict=True)))
        return begin(ledger, record, awaited=awaited)

    monkeypatch.setattr(Ledger, "begin", recording)
    path, body, headers = call
    response = await client.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert len(began) == 1
    known = {column for column, value in began[0].items() if value is not None}
    assert known - set(OPEN_COLUMNS) == set()
    assert {"policy_id", "policy_sha256", "request_sha256"} <= known  # a routed call's record
