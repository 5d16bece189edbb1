"""POST /v1/embeddings: never streams; `stream: true` is a 400 naming `stream`."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence

from llmeu.api.call import asks
from llmeu.api.call.accounting import Counts, estimate_tokens
from llmeu.api.call.door import Calls
from llmeu.api.call.governance import EMBEDDINGS, Intent
from llmeu.api.call.lifecycle import Call
from llmeu.api.http.asgi import Request
from llmeu.api.http.bodies import decode_body
from llmeu.cache.lookups import embeddings_cacheable
from llmeu.calls.request import EmbeddingInputs, RoutingRequest, end_user
from llmeu.errors import InvalidRequest
from llmeu.personal.scan import Screening
from llmeu.protocol.embeddings_wire import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    embeddings_request_decoder,
)
from llmeu.protocol.json_codec import encoder


async def handle_embeddings(calls: Calls, request: Request) -> None:
    async with calls.open(request, "embeddings") as call:
        refuse_stream_query(request)
        req = parse_embeddings(await call.body())
        inputs = normalise_inputs(req.input)
        intent = Intent(
            model=req.model,
            prompt=inputs,
            parts=_parts,
            masked=_masked,
            kept=list,
            needs=EMBEDDINGS,
            narrowing=req.llmeu if isinstance(req.llmeu, RoutingRequest) else None,
            texts=[i for i in inputs if isinstance(i, str)],
            prompt_tokens=_estimate,
            subject=end_user(req.user),
            max_output_tokens=0,
        )
        inputs = await call.govern(intent)
        dimensions = req.dimensions if isinstance(req.dimensions, int) else None
        await call.consult_cache(lambda: embeddings_cacheable(inputs, dimensions))
        await _embed(call, req, inputs, dimensions)


def _estimate(inputs: EmbeddingInputs) -> int:
    """Texts at ~4 characters a token; token ids count themselves."""
    texts = "".join(i for i in inputs if isinstance(i, str))
    return estimate_tokens(texts) + sum(len(i) for i in inputs if not isinstance(i, str))


def _parts(inputs: EmbeddingInputs) -> tuple[list[tuple[str, str]], list[str]]:
    """The texts to scan; token ids are reported as not scanned (the gateway has no
    tokenizer for every upstream to read them back into text)."""
    texts = [(f"input[{i}]", text) for i, text in enumerate(inputs) if isinstance(text, str)]
    tokens = [f"input[{i}]" for i, ids in enumerate(inputs) if not isinstance(ids, str)]
    return texts, tokens


def _masked(inputs: EmbeddingInputs, screening: Screening) -> EmbeddingInputs:
    """Texts masked; token ids (never masked, reported as not scanned) stay as they are."""
    texts = [text for text in inputs if isinstance(text, str)]
    if len(texts) != len(inputs):
        return inputs
    return [screening.masked(f"input[{i}]", text) for i, text in enumerate(texts)]


def refuse_stream_query(request: Request) -> None:
    if request.query.get("stream", "").lower() in ("true", "1", "yes"):
        raise InvalidRequest("this route never streams; `stream` must not be true", param="stream")


def parse_embeddings(body: bytes) -> EmbeddingsRequest:
    req = decode_body(embeddings_request_decoder.decode, body)
    if req.stream is True:
        raise InvalidRequest("embeddings never stream; `stream` must not be true", param="stream")
    return req


def normalise_inputs(raw: str | list[str | int | list[int]]) -> EmbeddingInputs:
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


async def _embed(
    call: Call, req: EmbeddingsRequest, inputs: EmbeddingInputs, dimensions: int | None
) -> None:
    endpoint, result = await call.complete(asks.embeddings(inputs, dimensions))
    if result.prompt_tokens is not None:
        call.counted(Counts(result.prompt_tokens, 0, False))
    elif isinstance(inputs[0], str):
        call.counted(Counts(estimate_tokens("".join(str(i) for i in inputs)), 0, True))
    else:  # token ids count themselves
        call.counted(Counts(sum(len(i) for i in inputs), 0, False))
    call.keep_content("")
    base64_output = req.encoding_format == "base64"
    data = [
        Embedding(index=i, embedding=_base64(v) if base64_output else list(v))
        for i, v in enumerate(result.vectors)
    ]
    tokens = call.usage().prompt_tokens
    body = EmbeddingsResponse(
        data=data,
        model=endpoint.model,
        usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens),
        llmeu=call.routing_block(),
    )
    await call.respond(encoder.encode(body))


def _base64(vector: Sequence[float]) -> str:
    """OpenAI's base64 encoding: little-endian float32."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
