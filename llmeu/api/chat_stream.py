"""Streamed chat completions, byte-exact to DESIGN §2.

Order of events: route and try endpoints until one produces its first delta
(fallback is possible only until then); make sure the in-progress trace is
durable; send the headers, the role frame and that first delta; forward every
further delta as its own frame the moment it arrives; record the finished
trace and only then send the finish frame (with the routing block and its
trace id), the usage frame if asked, and `[DONE]`. A client hang-up cancels
the handler, which closes the upstream at once and records `cancelled` with
what was produced; an upstream failure after the first frame ends the stream
with an error frame and no `[DONE]`.
"""

from __future__ import annotations

import asyncio
import time

from llmeu.api.calls import (
    Call,
    durable,
    estimate_prompt_tokens,
    shutting_down,
    tokens_for_characters,
)
from llmeu.api.errors import error_body, send_error
from llmeu.api.frames import FrameEncoder, StreamOutput, error_frame
from llmeu.api.http import SSE_HEADERS, DisconnectWatch, Request, Send
from llmeu.errors import ApiError, UpstreamError
from llmeu.ledger.records import CallStatus
from llmeu.protocol.sse import DONE_FRAME
from llmeu.protocol.wire import ChatCompletionRequest, Delta, Usage
from llmeu.providers.base import ChatStream, Provider
from llmeu.routing.fallback import run_with_fallback

INTERRUPTED = CallStatus.INTERRUPTED


async def _open(provider: Provider, chat: ChatCompletionRequest) -> tuple[ChatStream, Delta | None]:
    """Start the upstream and wait for its first delta (or its end)."""
    stream = await provider.stream_chat(chat)
    try:
        return stream, await stream.next_delta()
    except BaseException:
        await stream.aclose()
        raise


async def stream_chat(call: Call, chat: ChatCompletionRequest, request: Request) -> None:
    gw = call.gw
    plan = call.plan
    assert plan is not None
    send = request.send
    watch = DisconnectWatch(request.receive)
    watch.arm()
    began = call.begin()
    output = StreamOutput()
    upstream: ChatStream | None = None
    frames: FrameEncoder | None = None
    started = False
    try:
        endpoint, (upstream, delta) = await run_with_fallback(
            plan, lambda ep: call.attempt(ep, lambda: _open(gw.providers[ep.endpoint_id], chat))
        )
        frames = FrameEncoder(
            "chatcmpl-" + call.trace_id[4:], int(call.record.received_at), endpoint.model
        )
        await durable(gw, began)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": call.response_headers(SSE_HEADERS),
            }
        )
        started = True
        pending = frames.role()
        if delta is not None:
            call.record.first_token_at = time.time()
            gw.observers.first_token(call.record)
        while delta is not None:
            await _forward(upstream, delta, pending, frames, output, send)
            pending = b""
            delta = await upstream.next_delta()
        if pending:
            await send({"type": "http.response.body", "body": pending, "more_body": True})
        watch.disarm()
    except asyncio.CancelledError:
        if not (watch.disconnected or gw.interrupting):
            raise
        watch.handled()
        if upstream is not None:
            await upstream.aclose()
        if watch.disconnected:
            _account(call, chat, upstream.usage if upstream else None, output)
            await durable(gw, call.finish(CallStatus.CANCELLED, http_status=499))
            return
        stopped = shutting_down()
        await _fail(call, chat, stopped, output, send, started=started, status=INTERRUPTED)
        return
    except UpstreamError as error:
        watch.disarm()
        if upstream is not None:
            await upstream.aclose()
        await _fail(call, chat, error, output, send, started=started)
        return
    finally:
        watch.close()
    assert frames is not None and upstream is not None
    _account(call, chat, upstream.usage, output)
    record = call.record
    record.finish_reason = upstream.finish_reason or "stop"
    await durable(gw, call.finish(CallStatus.COMPLETED))
    tail = frames.finish(record.finish_reason, call.routing_block())
    if chat.stream_options and chat.stream_options.include_usage:
        assert record.input_tokens is not None and record.output_tokens is not None
        total = record.input_tokens + record.output_tokens
        tail += frames.usage(Usage(record.input_tokens, record.output_tokens, total))
    await send({"type": "http.response.body", "body": tail + DONE_FRAME, "more_body": False})


async def _forward(
    upstream: ChatStream,
    delta: Delta,
    pending: bytes,
    frames: FrameEncoder,
    output: StreamOutput,
    send: Send,
) -> None:
    """Send `delta`'s frame, together with the frames already waiting and the further
    deltas that arrived with it: one write, one frame per delta, nothing held back."""
    body = pending
    current: Delta | None = delta
    try:
        while current is not None:
            output.add(current)
            body += frames.delta(current)
            current = upstream.buffered_delta()
    finally:
        await send({"type": "http.response.body", "body": body, "more_body": True})


def _account(
    call: Call, chat: ChatCompletionRequest, usage: Usage | None, output: StreamOutput
) -> None:
    """Token counts: the upstream's when it reported them, else the gateway's estimate
    (output: the larger of the delta count and a quarter of the characters)."""
    if usage is not None:
        call.account(usage.prompt_tokens, usage.completion_tokens, False)
    else:
        estimated = max(output.deltas, tokens_for_characters(output.characters()))
        call.account(estimate_prompt_tokens(chat), estimated, True)
    call.store_content(chat.messages, output.stored())


async def _fail(
    call: Call,
    chat: ChatCompletionRequest,
    error: ApiError,
    output: StreamOutput,
    send: Send,
    *,
    started: bool,
    status: CallStatus = CallStatus.FAILED,
) -> None:
    """Before the headers went out the client gets an HTTP error; after, an error frame."""
    gw = call.gw
    if call.endpoint is not None:
        _account(call, chat, None, output)
    if not started:
        await durable(gw, call.finish(status, error=error))
        await send_error(send, error, trace_id=call.trace_id, routing=call.error_routing())
        return
    await durable(gw, call.finish(status, error=error, http_status=200))
    body = error_frame(error_body(error, call.routing_block()))
    await send({"type": "http.response.body", "body": body, "more_body": False})
