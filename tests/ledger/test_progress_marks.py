"""A stream's progress marks: what it delivered so far, written into its in-progress row about
once a second, so that a process killed mid-stream leaves an `interrupted` trace with the
tokens the client received (estimated) and where they came from."""

from __future__ import annotations

import time

from llmeu.calls.output import Delta, StreamOutput
from llmeu.calls.record import Attempt, CallStatus, TraceRecord
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from tests.ledger.conftest import trace


def streaming(instance_id: str = "gw_gone") -> tuple[TraceRecord, StreamOutput]:
    """A call that is streaming from an endpoint, and what it delivered so far."""
    call = trace(CallStatus.IN_PROGRESS, instance_id=instance_id)
    call.endpoint_id, call.provider, call.model_used = "fakeprov-fr-a", "fakeprov", "fake"
    call.inference_region, call.sovereignty_class = "fr-par", "eu_sovereign"
    call.first_token_at = call.received_at + 0.25
    call.attempts = [Attempt("fakeprov-fr-a", "fakeprov", call.received_at, outcome="served")]
    call.attempts.insert(
        0, Attempt("other", "p", call.received_at, outcome="failed", error="'Bonjour' refused")
    )
    output = StreamOutput()
    for text in ("Bonjour", ", voici ", "la réponse"):
        output.add(Delta(content=text))
    return call, output


async def test_an_interrupted_stream_records_what_it_delivered(
    store: Store, ledger: Ledger
) -> None:
    await store.heartbeat("gw_gone", 0.0)
    call, output = streaming()
    await ledger.durable(ledger.begin(call), 5)
    ledger.progress(call, output)
    ledger.mark_progress()  # the stream is seen: it may end within the second
    assert ledger.depth == 0
    ledger.mark_progress()
    await ledger.flush(5)
    output.add(Delta(content=" — fin"))  # delivered after the last mark: not recorded

    assert await store.mark_interrupted(live_after=1.0, now=time.time()) == 1  # the next start
    view = await store.get_trace(call.trace_id)
    assert view is not None and view["status"] == "interrupted"
    assert view["usage"] == {"input_tokens": None, "output_tokens": 7, "estimated": True,
                             "cost_eur": None}  # fmt: skip
    assert view["routing"]["endpoint_id"] == "fakeprov-fr-a"
    assert view["routing"]["sovereignty_class"] == "eu_sovereign"
    assert view["timings"]["first_token_at"] == call.first_token_at
    assert [(a["endpoint_id"], a["error"]) for a in view["attempts"]] == [
        ("other", None), ("fakeprov-fr-a", None)  # no upstream error text: it may quote the prompt
    ]  # fmt: skip


async def test_a_stream_has_one_mark_waiting_and_none_once_finished(
    store: Store, ledger: Ledger
) -> None:
    call, output = streaming()
    ledger.progress(call, output)
    ledger.mark_progress()
    for more in range(3):
        output.add(Delta(content=f" {more}"))
        ledger.mark_progress()
    assert ledger.depth == 1  # one mark, its row the newest
    ledger.mark_progress()  # nothing new delivered: no mark
    assert ledger.depth == 1
    call.status, call.output_tokens = CallStatus.COMPLETED, 20
    ledger.finish(call)
    output.add(Delta(content="!"))
    ledger.mark_progress()
    assert ledger.depth == 2  # the mark and the final row; no mark after the end
    await ledger.flush(5)
    view = await store.get_trace(call.trace_id)
    assert (
        view is not None and view["status"] == "completed" and view["usage"]["output_tokens"] == 20
    )
