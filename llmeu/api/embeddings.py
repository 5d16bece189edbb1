"""POST /v1/embeddings: never streams; `stream: true` is a 400 naming `stream`."""

from __future__ import annotations

import asyncio
import base64
import struct
from collections.abc import Sequence

from llmeu.api.bodies import decode_body
from llmeu.api.calls import Call, durable, estimate_tokens, open_call
from llmeu.api.dispatch import abandoned, reach, refuse, route
from llmeu.api.gateway import Gateway
from llmeu.api.http import JSON_HEADERS, Request, send_response
from llmeu.errors import ApiError, InvalidRequest
from llmeu.ledger.records import CallStatus
from llmeu.protocol.wire import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    embeddings_request_decoder,
    encoder,
)
from llmeu.providers.base import Embeddings, Provider
from llmeu.routing.catalog import Capability

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
            lambda: (
                estimate_tokens("".join(texts))
                + sum(len(i) for i in inputs if not isinstance(i, str))
            )
        )
        route(call, request, req.model, _EMBEDDINGS, req.llmeu)
    except ApiError as error:
        await refuse(call, request, error)
        return
    except asyncio.CancelledError:
        abandoned(call)
        raise
    await _embed(call, req, inputs, request)


def refuse_stream_query(request: Request) -> None:
    if request.query.get("stream", "").lower() in ("true", "1", "yes"):
        raise InvalidRequest("this route never streams; `stream` must not be true", param="stream")


def parse_embeddings(body: bytes) -> EmbeddingsRequest:
    req = decode_body(embeddings_request_decoder.decode, body)
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
    dimensions = req.dimensions if isinstance(req.dimensions, int) else None

    async def embed(provider: Provider) -> Embeddings:
        return await provider.embed(inputs, dimensions)

    reached = await reach(call, request, embed)
    if reached is None:
        return
    endpoint, result = reached
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
    await durable(call.gw, call.finish(CallStatus.COMPLETED))
    await send_response(
        request.send, 200, encoder.encode(body), call.response_headers(JSON_HEADERS)
    )


def _base64(vector: Sequence[float]) -> str:
    """OpenAI's base64 encoding: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
