"""Request and response shapes of the OpenAI-compatible surface, as msgspec structs.

Decoding a request validates it: wrong types, out-of-range values and unknown
top-level fields fail with a message that names the offending path
(`messages[0].content`), which becomes the error's `param`. Unknown fields
*inside* messages, content parts and tools are ignored and not forwarded,
because SDKs commonly echo response objects back as messages (with
`annotations`, `audio`, ...). Optional fields default to `UNSET`, so
re-encoding a request forwards exactly the fields the caller set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

NonNegative = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1)]
Temperature = Annotated[float, Meta(ge=0, le=2)]
Probability = Annotated[float, Meta(ge=0, le=1)]
Penalty = Annotated[float, Meta(ge=-2, le=2)]
ShortString = Annotated[str, Meta(max_length=256)]


class _In(Struct, omit_defaults=True):
    """Base of nested request objects: unknown fields ignored."""


class TextPart(_In, tag_field="type", tag="text"):
    text: str


class ImageURL(_In):
    url: str
    detail: str | UnsetType = UNSET


class ImagePart(_In, tag_field="type", tag="image_url"):
    image_url: ImageURL


class InputAudio(_In):
    data: str
    format: str


class AudioPart(_In, tag_field="type", tag="input_audio"):
    input_audio: InputAudio


class FileRef(_In):
    file_data: str | UnsetType = UNSET
    file_id: str | UnsetType = UNSET
    filename: str | UnsetType = UNSET


class FilePart(_In, tag_field="type", tag="file"):
    file: FileRef


class RefusalPart(_In, tag_field="type", tag="refusal"):
    refusal: str


ContentPart = TextPart | ImagePart | AudioPart | FilePart | RefusalPart


class FunctionCall(_In):
    name: str
    arguments: str


class ToolCall(_In):
    type: Literal["function"]
    id: str
    function: FunctionCall


class SystemMessage(_In, tag_field="role", tag="system"):
    content: str | list[TextPart]
    name: str | UnsetType | None = UNSET


class DeveloperMessage(_In, tag_field="role", tag="developer"):
    content: str | list[TextPart]
    name: str | UnsetType | None = UNSET


class UserMessage(_In, tag_field="role", tag="user"):
    content: str | list[ContentPart]
    name: str | UnsetType | None = UNSET


class AssistantMessage(_In, tag_field="role", tag="assistant"):
    content: str | list[TextPart | RefusalPart] | UnsetType | None = UNSET
    refusal: str | UnsetType | None = UNSET
    name: str | UnsetType | None = UNSET
    tool_calls: list[ToolCall] | UnsetType | None = UNSET
    function_call: FunctionCall | UnsetType | None = UNSET


class ToolMessage(_In, tag_field="role", tag="tool"):
    content: str | list[TextPart]
    tool_call_id: str


class FunctionMessage(_In, tag_field="role", tag="function"):
    name: str
    content: str | None


Message = (
    SystemMessage
    | DeveloperMessage
    | UserMessage
    | AssistantMessage
    | ToolMessage
    | FunctionMessage
)


def role_of(message: Message) -> str:
    """The `role` of a decoded message (msgspec keeps the tag on the type)."""
    return str(message.__struct_config__.tag)


def text_of(message: Message) -> str:
    """The text a message carries (text parts joined; images, audio and files left out)."""
    content = message.content
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(getattr(part, "text", "") or getattr(part, "refusal", "") for part in content)


class FunctionDefinition(_In):
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    description: str | UnsetType = UNSET
    parameters: dict[str, Any] | UnsetType = UNSET
    strict: bool | UnsetType | None = UNSET


class Tool(_In):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(_In):
    name: str


class ToolChoiceFunction(_In):
    type: Literal["function"]
    function: NamedFunction


class ResponseFormat(_In):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: dict[str, Any] | UnsetType = UNSET


class StreamOptions(_In):
    include_usage: bool | UnsetType | None = UNSET


class RoutingRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The `llmeu` request field: narrows the caller's policy, never widens it."""

    policy_id: str | UnsetType = UNSET
    allow_classes: list[str] | UnsetType = UNSET
    allow_countries: list[str] | UnsetType = UNSET
    allow_providers: list[str] | UnsetType = UNSET


class ChatCompletionRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    model: Annotated[str, Meta(min_length=1, max_length=256)]
    messages: Annotated[list[Message], Meta(min_length=1)]
    stream: bool | UnsetType | None = UNSET
    stream_options: StreamOptions | UnsetType | None = UNSET
    temperature: Temperature | UnsetType | None = UNSET
    top_p: Probability | UnsetType | None = UNSET
    n: Positive | UnsetType | None = UNSET
    max_tokens: Positive | UnsetType | None = UNSET
    max_completion_tokens: Positive | UnsetType | None = UNSET
    stop: str | Annotated[list[str], Meta(max_length=4)] | UnsetType | None = UNSET
    seed: int | UnsetType | None = UNSET
    presence_penalty: Penalty | UnsetType | None = UNSET
    frequency_penalty: Penalty | UnsetType | None = UNSET
    logit_bias: dict[str, float] | UnsetType | None = UNSET
    logprobs: bool | UnsetType | None = UNSET
    top_logprobs: Annotated[int, Meta(ge=0, le=20)] | UnsetType | None = UNSET
    tools: list[Tool] | UnsetType | None = UNSET
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceFunction | UnsetType | None = UNSET
    parallel_tool_calls: bool | UnsetType | None = UNSET
    response_format: ResponseFormat | UnsetType | None = UNSET
    reasoning_effort: ShortString | UnsetType | None = UNSET
    user: ShortString | UnsetType | None = UNSET
    metadata: dict[ShortString, Annotated[str, Meta(max_length=512)]] | UnsetType | None = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET


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


# Responses ------------------------------------------------------------------


class CostEstimate(Struct):
    currency: str
    input_tokens: int | None
    output_tokens: int | None
    amount: float | None
    estimated: bool


class RoutingBlock(Struct):
    """The `llmeu` block of DESIGN §3, in every response and in a stream's final frame."""

    trace_id: str
    model_used: str
    model_version: str
    provider: str
    endpoint_id: str
    inference_region: str
    sovereignty_class: str
    policy_id: str
    retention: str
    cost_estimate: CostEstimate


class ToolCallFunctionDelta(Struct, omit_defaults=True):
    name: str | UnsetType = UNSET
    arguments: str | UnsetType = UNSET


class ToolCallDelta(Struct, omit_defaults=True):
    index: int
    id: str | UnsetType = UNSET
    type: str | UnsetType = UNSET
    function: ToolCallFunctionDelta | UnsetType = UNSET


class Delta(Struct, omit_defaults=True):
    """One streamed delta; upstream deltas decode into it and are forwarded as they are."""

    role: str | UnsetType = UNSET
    content: str | UnsetType | None = UNSET
    refusal: str | UnsetType | None = UNSET
    reasoning_content: str | UnsetType | None = UNSET
    tool_calls: list[ToolCallDelta] | UnsetType | None = UNSET

    def carries_output(self) -> bool:
        return bool(self.content or self.refusal or self.reasoning_content or self.tool_calls)


class Usage(Struct):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


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


class AssistantOutput(Struct):
    role: str
    content: str | None
    refusal: str | None = None
    tool_calls: list[ToolCall] | UnsetType = UNSET


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


class ErrorDetail(Struct):
    message: str
    type: str
    param: str | None
    code: str | None
    details: list[dict[str, Any]] | UnsetType = UNSET


class ErrorBody(Struct, omit_defaults=True):
    error: ErrorDetail
    llmeu: RoutingBlock | dict[str, Any] | UnsetType = UNSET


encoder = msgspec.json.Encoder()
chat_request_decoder = msgspec.json.Decoder(ChatCompletionRequest)
embeddings_request_decoder = msgspec.json.Decoder(EmbeddingsRequest)

# msgspec refuses JSON nested deeper than the interpreter's recursion limit
# allows (RecursionError); free-form values (tool parameters, JSON schemas,
# platform bodies) are held to far less, so that no later encode of them can
# reach that limit either.
MAX_NESTING = 64


def nesting_depth(value: object) -> int:
    """How deeply lists and objects nest in decoded JSON (walked without recursion)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children)
    return deepest
