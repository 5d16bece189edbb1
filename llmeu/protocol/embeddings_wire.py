"""The embeddings wire: `POST /v1/embeddings` request and response. It never streams."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.request import Positive, RoutingRequest, ShortString
from llmeu.protocol.routing_block import RoutingBlock

# A string, a list of strings, a list of token ids, or a list of token-id lists;
# msgspec allows one array type per union, so homogeneity is checked after decoding.
EmbeddingInput = str | Annotated[list[str | int | list[int]], Meta(min_length=1, max_length=2048)]


class EmbeddingsRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    model: Annotated[str, Meta(min_length=1, max_length=256)]
    input: EmbeddingInput
    encoding_format: Literal["float", "base64"] | UnsetType = UNSET
    dimensions: Positive | UnsetType = UNSET
    user: ShortString | UnsetType | None = UNSET
    stream: bool | UnsetType | None = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET


class Embedding(Struct, kw_only=True):
    object: str = "embedding"
    index: int
    embedding: list[float] | str


class EmbeddingsUsage(Struct):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsResponse(Struct, kw_only=True):
    object: str = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingsUsage
    llmeu: RoutingBlock


embeddings_request_decoder = msgspec.json.Decoder(EmbeddingsRequest)
