"""POST /v1/embeddings: never streams; `stream: true` is a 400 naming `stream`."""

from __future__ import annotations

import asyncio
import base64
import struct
import time
from collections.abc import Sequence

import msgspec

from llmeu.api.calls import Call, durable, estimate_tokens, open_call, shutting_down
from llmeu.api.errors import send_error
from llmeu.api.gateway import Gateway
from llmeu.api.http import JSON_HEADERS, DisconnectWatch, Request, send_response
from llmeu.errors import ApiError, InvalidRequest, UpstreamError
from llmeu.ledger.records import CallStatus
from llmeu.protocol.errors import describe_validation_error
from llmeu.protocol.wire import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    RoutingRequest,
    embeddings_request_decoder,
    encoder,
)
from llmeu.providers.base import Embeddings
from llmeu.routing.catalog import Capability
from llmeu.routing.fallback import run_with_fallback
from llmeu.routing.router import plan_route

_EMBEDDINGS = frozenset({Capability.EMBEDDINGS})
Inputs = Sequence[str] | Sequence[Sequence[int]]


async def handle_embeddings(gw: Gateway, request: Request) -> None:
    key = await gw.keys.authenticate(request.header(b"authorization"))
    call = open_call(gw, key, "embeddings", request)
    try:
        refuse_stream_query(request)
        req = parse_embeddings(await request.body(gw.settings.max_body_bytes))
        call.record.request_model = req.model
        inputs = normalise_inputs(req.input)
        texts = [i for i in inputs if isinstance(i, str)]
        call.sensitive.extend(texts)
        await call.admit(
            estimate_tokens("".join(texts)) + sum(len(i) for i in inputs if not isinstance(i, str))
        )
        policy = gw.policies.effective(
            key.policy_id,
            req.llmeu if isinstance(req.llmeu, RoutingRequest) else None,
            request.header(b"x-llmeu-policy"),
        )
        call.governed_by(policy)
        plan = plan_route(
            gw.config.catalog,
            req.model,
            _EMBEDDINGS,
            policy,
            unavailable=gw.unavailable,
            health=gw.breaker.snapshot(time.monotonic()),
        )
        call.routed(plan)
    except ApiError as error:
        await durable(gw, call.reject(error))
        await send_error(request.send, error, trace_id=call.trace_id)
        return
    await _embed(call, req, inputs, request)


def refuse_stream_query(request: Request) -> None:
    if request.query.get("stream", "").lower() in ("true", "1", "yes"):
        raise InvalidRequest("this route never streams; `stream` must not be true", param="stream")


def parse_embeddings(body: bytes) -> EmbeddingsRequest:
    try:
        req = embeddings_request_decoder.decode(body)
    except msgspec.ValidationError as error:
        message, param = describe_validation_error(str(error))
        raise InvalidRequest(f"Invalid request: {message}", param=param) from None
    except msgspec.DecodeError as error:
        raise InvalidRequest(f"Invalid JSON body: {error}", code="invalid_json") from None
    except RecursionError:
        raise InvalidRequest("Invalid JSON body: nested too deeply", code="invalid_json") from None
    if req.stream is True:
        raise InvalidRequest("embeddings never stream; `stream` must not be true", param="stream")
    return req


def normalise_inputs(raw: str | list[str | int | list[int]]) -> Inputs:
    """A list of texts, or a list of token-id lists; mixed lists are refused."""
    if isinstance(raw, str):
        return [raw]
    if all(isinstance(item, str) for item in raw):
        texts = [item for item in raw if isinstance(item, str)]
        if any(not text for text in texts):
            raise InvalidRequest("input strings must not be empty", param="input")
        return texts
    if all(isinstance(item, int) for item in raw):
        return [[item for item in raw if isinstance(item, int)]]
    if all(isinstance(item, list) and item for item in raw):
        return [item for item in raw if isinstance(item, list)]
    raise InvalidRequest(
        "input must be a string, a list of strings, a list of token ids or a list of "
        "token-id lists (not a mix)",
        param="input",
    )


async def _embed(call: Call, req: EmbeddingsRequest, inputs: Inputs, request: Request) -> None:
    gw = call.gw
    assert call.plan is not None
    dimensions = req.dimensions if isinstance(req.dimensions, int) else None
    watch = DisconnectWatch(request.receive)
    watch.arm()
    call.begin()

    async def attempt(endpoint_id: str) -> Embeddings:
        return await gw.providers[endpoint_id].embed(inputs, dimensions)

    try:
        endpoint, result = await run_with_fallback(
            call.plan, lambda ep: call.attempt(ep, lambda: attempt(ep.endpoint_id))
        )
        watch.disarm()
    except asyncio.CancelledError:
        if not (watch.disconnected or gw.interrupting):
            raise
        watch.handled()
        if watch.disconnected:
            await durable(gw, call.finish(CallStatus.CANCELLED, http_status=499))
            return
        stopped = shutting_down()
        await durable(gw, call.finish(CallStatus.INTERRUPTED, error=stopped))
        await send_error(request.send, stopped, trace_id=call.trace_id)
        return
    except UpstreamError as error:
        watch.disarm()
        await durable(gw, call.finish(CallStatus.FAILED, error=error))
        await send_error(request.send, error, trace_id=call.trace_id, routing=call.error_routing())
        return
    finally:
        watch.close()
    if result.prompt_tokens is not None:
        call.account(result.prompt_tokens, 0, False)
    elif isinstance(inputs[0], str):
        call.account(estimate_tokens("".join(str(i) for i in inputs)), 0, True)
    else:  # token ids count themselves
        call.account(sum(len(i) for i in inputs), 0, False)
    call.store_content(list(inputs), "")
    base64_output = req.encoding_format == "base64"
    data = [
        Embedding(index=i, embedding=_base64(v) if base64_output else list(v))
        for i, v in enumerate(result.vectors)
    ]
    tokens = call.record.input_tokens or 0
    body = EmbeddingsResponse(
        data=data,
        model=endpoint.model,
        usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens),
        llmeu=call.routing_block(),
    )
    await durable(gw, call.finish(CallStatus.COMPLETED))
    await send_response(
        request.send, 200, encoder.encode(body), call.response_headers(JSON_HEADERS)
    )


def _base64(vector: Sequence[float]) -> str:
    """OpenAI's base64 encoding: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
