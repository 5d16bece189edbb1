"""The chat-completions wire (docs/design.md §2): the response objects and the request decoder.

The request body decodes straight into the canonical `ChatRequest`
(`llmeu.calls.request`), whose shape is this surface's.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Struct, UnsetType

from llmeu.calls.output import AssistantOutput, Delta, Usage
from llmeu.calls.request import ChatRequest
from llmeu.protocol.routing_block import RoutingBlock


class ChunkChoice(Struct):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: None = None


class ChatCompletionChunk(Struct, kw_only=True):
    id: str
    object: str = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | UnsetType = UNSET
    llmeu: RoutingBlock | UnsetType = UNSET


class Choice(Struct):
    index: int
    message: AssistantOutput
    finish_reason: str | None
    logprobs: None = None


class ChatCompletion(Struct, kw_only=True):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    llmeu: RoutingBlock


chat_request_decoder = msgspec.json.Decoder(ChatRequest)
