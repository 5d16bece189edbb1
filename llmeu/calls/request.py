"""The canonical request of a chat call: messages with content parts, tools, sampling, narrowing.

Decoding a request validates it: wrong types, out-of-range values and unknown
top-level fields fail with a message that names the offending path
(`messages[0].content`), which becomes the error's `param`. Unknown fields
*inside* messages, content parts and tools are ignored and not forwarded,
because SDKs commonly echo response objects back as messages (with
`annotations`, `audio`, ...). Optional fields default to `UNSET`, so
re-encoding a request forwards exactly the fields the caller set, but for
the `GATEWAY_FIELDS` (`upstream_fields`). The tools a request offers and the
calls of them are `llmeu.calls.tools`.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.structs import replace

from llmeu.calls.tools import (
    AnyToolCall,
    CacheControl,
    CustomTool,
    FunctionCall,
    FunctionDefinition,
    NamedFunction,
    Tool,
    ToolChoice,
)

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
    cache_control: CacheControl | UnsetType = UNSET


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


class ThinkingBlock(_In, tag_field="type", tag="thinking"):
    """A reasoning step of an earlier assistant turn, with the signature its upstream made."""

    thinking: str
    signature: str | UnsetType = UNSET


class RedactedThinkingBlock(_In, tag_field="type", tag="redacted_thinking"):
    """A reasoning step the upstream returned only as opaque (encrypted) data."""

    data: str


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
    tool_calls: list[AnyToolCall] | UnsetType | None = UNSET
    function_call: FunctionCall | UnsetType | None = UNSET
    # Reasoning the turn carried, to hand back to an upstream that takes it (Anthropic's
    # thinking with signatures, Responses' reasoning items); in the field and shape other
    # OpenAI-compatible gateways use, and never sent to an upstream that does not take it.
    thinking_blocks: list[ThinkingBlock | RedactedThinkingBlock] | UnsetType | None = UNSET


class ToolMessage(_In, tag_field="role", tag="tool"):
    content: str | list[TextPart]
    tool_call_id: str
    is_error: bool | UnsetType = UNSET  # the tool failed (Anthropic's tool_result), where known


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


class ResponseFormat(_In):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: dict[str, Any] | UnsetType = UNSET


class StreamOptions(_In):
    include_usage: bool | UnsetType | None = UNSET
    # OpenAI pads stream events with random `obfuscation` text unless this is false; llmeu's
    # frames carry no padding (DESIGN §2), so `false` is what it does anyway.
    include_obfuscation: bool | UnsetType | None = UNSET


class Prediction(_In):
    """Predicted output (OpenAI's latency hint): the answer is the same without it."""

    type: Literal["content"]
    content: str | list[TextPart]


class Thinking(_In):
    """Extended reasoning asked of the upstream (Anthropic's `thinking`): `enabled` requires
    it, `adaptive` and `between_tools` let the model decide (so an upstream without it serves
    by not thinking), `disabled` asks for none. `display` (how the upstream shows it) goes
    only to an upstream that speaks Anthropic's wire."""

    type: Literal["enabled", "disabled", "adaptive", "between_tools"]
    budget_tokens: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    display: ShortString | UnsetType | None = UNSET


class RoutingRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The `llmeu` request field: narrows the caller's policy, never widens it."""

    policy_id: str | UnsetType = UNSET
    allow_classes: list[str] | UnsetType = UNSET
    allow_countries: list[str] | UnsetType = UNSET
    allow_providers: list[str] | UnsetType = UNSET
    require_jurisdictions: list[str] | UnsetType = UNSET
    require_certifications: list[str] | UnsetType = UNSET
    min_seal: int | UnsetType = UNSET
    allow_hosted_tools: list[str] | UnsetType = UNSET
    allow_mcp_servers: list[str] | UnsetType = UNSET
    allow_tools: list[str] | UnsetType = UNSET
    receipt: bool | UnsetType = UNSET
    """Ask for the call's signed receipt: `x-llmeu-receipt` on a whole answer, `receipt`
    in the routing block of a stream's final frame. Narrows nothing."""
    cache: bool | UnsetType = UNSET
    """`false`: the call is neither answered from the answer cache nor kept in it, whatever
    its policy's `cache:` section allows. Narrows nothing."""


class ChatRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The canonical chat call: what every surface decodes into and every provider reads.

    Its shape is OpenAI's chat-completions request, the one shape every
    OpenAI-compatible upstream already speaks, so the chat surface decodes
    straight into it and the OpenAI provider forwards it with only the model
    name replaced. Another surface maps its own request onto these fields
    (e.g. Responses' `input` items onto `messages`, its `max_output_tokens`
    onto `max_completion_tokens`); a provider of another kind maps them onto
    its upstream's request. Fields a caller did not set stay `UNSET` and are
    never forwarded, nor are the `GATEWAY_FIELDS`.
    """

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
    tools: list[Tool | CustomTool] | UnsetType | None = UNSET
    tool_choice: ToolChoice | UnsetType | None = UNSET
    parallel_tool_calls: bool | UnsetType | None = UNSET
    response_format: ResponseFormat | UnsetType | None = UNSET
    reasoning_effort: ShortString | UnsetType | None = UNSET
    user: ShortString | UnsetType | None = UNSET
    metadata: dict[ShortString, Annotated[str, Meta(max_length=512)]] | UnsetType | None = UNSET
    # Beyond OpenAI's fields: what other surfaces ask and other upstreams take. `top_k` is
    # forwarded as OpenAI-compatible servers commonly accept it; `thinking` goes only to an
    # upstream that supports it (elsewhere a 400 naming it).
    top_k: Annotated[int, Meta(ge=1)] | UnsetType | None = UNSET
    thinking: Thinking | UnsetType | None = UNSET
    # OpenAI's fields the gateway reads but never forwards (`GATEWAY_FIELDS`): an upstream
    # that does not know a field may refuse the call, and most of these ask the provider to
    # keep, bill or run something that the policy, not the caller, decides.
    functions: list[FunctionDefinition] | UnsetType | None = UNSET
    function_call: Literal["none", "auto"] | NamedFunction | UnsetType | None = UNSET
    safety_identifier: ShortString | UnsetType | None = UNSET
    modalities: list[Literal["text", "audio"]] | UnsetType | None = UNSET
    audio: dict[str, Any] | UnsetType | None = UNSET
    prediction: Prediction | UnsetType | None = UNSET
    prompt_cache_key: str | UnsetType | None = UNSET
    prompt_cache_options: dict[str, Any] | UnsetType | None = UNSET
    prompt_cache_retention: ShortString | UnsetType | None = UNSET
    service_tier: ShortString | UnsetType | None = UNSET
    store: bool | UnsetType | None = UNSET
    verbosity: ShortString | UnsetType | None = UNSET
    web_search_options: dict[str, Any] | UnsetType | None = UNSET
    moderation: dict[str, Any] | UnsetType | None = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET


GATEWAY_FIELDS = (
    "functions", "function_call", "safety_identifier", "modalities", "audio", "prediction",
    "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "service_tier",
    "store", "verbosity", "web_search_options", "moderation",
)  # fmt: skip
"""The `ChatRequest` fields no upstream gets: what the chat surface accepts and acts on
itself (`functions` as tools, `safety_identifier` as the end user) or accepts without
effect (`llmeu.protocol.chat_wire.ignored_fields`)."""


_gateway_values = attrgetter(*GATEWAY_FIELDS)


def upstream_fields(request: ChatRequest) -> ChatRequest:
    """`request` without its `GATEWAY_FIELDS`, as an OpenAI-compatible upstream gets it."""
    if _gateway_values(request).count(UNSET) == len(GATEWAY_FIELDS):  # the usual call: cheap
        return request
    return replace(request, **dict.fromkeys(GATEWAY_FIELDS, UNSET))


EmbeddingInputs = Sequence[str] | Sequence[Sequence[int]]
"""What an embeddings call embeds: texts, or token-id lists (never a mix)."""


def end_user(user: object, metadata: object = None) -> str | None:
    """The end user a call is made for, as the caller named them: `user` (OpenAI's field;
    the Responses API's `safety_identifier` and Anthropic's `metadata.user_id` map onto it),
    else a `user_id` in `metadata`. Erasure by data subject finds calls by it."""
    if isinstance(user, str) and user:
        return user
    if isinstance(metadata, dict):
        value = metadata.get("user_id")
        if isinstance(value, str) and value:
            return value
    return None
