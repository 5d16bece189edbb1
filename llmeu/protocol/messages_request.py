"""Anthropic's Messages wire, the request's shapes: decoding and validation.

The family, all pure (in `llmeu.protocol`):

    messages_request   the request: its shapes, decoded and validated
    messages_codec     the request → ChatRequest; Anthropic's stop reasons
    messages_reply     the answer: the `message`, usage, Anthropic's errors
    messages_stream    the events both ways: MessagesFrames (encode),
                       MessagesEventDecoder (Anthropic's own events → deltas)
    messages_upstream  ChatRequest → Anthropic's request; its message → Completion

Decoding validates like Anthropic does: unknown top-level fields, a missing
`max_tokens`, a value out of range are a 400 naming the path. Inside content
blocks and tools unknown fields are ignored (SDKs echo response blocks back,
with `citations`, ...); a `cache_control` breakpoint on a text block, a tool
result or a tool is kept for the upstreams that cache prompts. Every field of
Anthropic's request (the `anthropic` SDK's `MessageCreateParams`, beta fields
included) is accepted: acted on, or without effect and named by `ignored_fields`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.request import RoutingRequest, Thinking
from llmeu.calls.tools import CacheControl
from llmeu.protocol.chat_wire import set_fields
from llmeu.protocol.json_codec import encoder

ANTHROPIC_VERSION = "2023-06-01"
"""The version this wire is written against (the only one Anthropic has published)."""


class _In(Struct, omit_defaults=True):
    """Nested request objects: unknown fields ignored."""


class Base64Source(_In, tag_field="type", tag="base64"):
    media_type: str
    data: str


class URLSource(_In, tag_field="type", tag="url"):
    url: str


class TextSource(_In, tag_field="type", tag="text"):
    media_type: str
    data: str


class FileSource(_In, tag_field="type", tag="file"):
    file_id: str


class TextBlockIn(_In, tag_field="type", tag="text"):
    text: str
    cache_control: CacheControl | UnsetType | None = UNSET


class ImageBlockIn(_In, tag_field="type", tag="image"):
    source: Base64Source | URLSource | FileSource


class DocumentBlockIn(_In, tag_field="type", tag="document"):
    source: Base64Source | URLSource | TextSource | FileSource
    title: str | UnsetType | None = UNSET


class ToolUseBlockIn(_In, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlockIn(_In, tag_field="type", tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlockIn | ImageBlockIn | DocumentBlockIn] | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET
    cache_control: CacheControl | UnsetType | None = UNSET


class ThinkingBlockIn(_In, tag_field="type", tag="thinking"):
    thinking: str
    signature: str | UnsetType = UNSET


class RedactedThinkingBlockIn(_In, tag_field="type", tag="redacted_thinking"):
    data: str


BlockIn = (
    TextBlockIn
    | ImageBlockIn
    | DocumentBlockIn
    | ToolUseBlockIn
    | ToolResultBlockIn
    | ThinkingBlockIn
    | RedactedThinkingBlockIn
)


class MessageIn(_In):
    role: Literal["user", "assistant", "system"]  # `system` mid-conversation, as Claude Code
    content: str | list[BlockIn]


class ToolIn(_In):
    """A client tool (`input_schema`), or a server tool by its `type` (some, such as a
    toolset, have no name). Tools decode as JSON values first (`MessagesRequest.tools`), so a
    server tool keeps every option it was sent with."""

    name: Annotated[str, Meta(min_length=1, max_length=128)] | UnsetType = UNSET
    type: str | UnsetType | None = UNSET
    description: str | UnsetType = UNSET
    input_schema: dict[str, Any] | UnsetType = UNSET
    cache_control: CacheControl | UnsetType | None = UNSET


class ToolChoiceAuto(_In, tag_field="type", tag="auto"):
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceAny(_In, tag_field="type", tag="any"):
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceTool(_In, tag_field="type", tag="tool"):
    name: str
    disable_parallel_tool_use: bool | UnsetType = UNSET


class ToolChoiceNone(_In, tag_field="type", tag="none"):
    pass


class MetadataIn(_In):
    user_id: str | UnsetType | None = UNSET


class OutputConfig(_In):
    effort: str | UnsetType | None = UNSET  # accepted; each upstream reasons as it does
    format: dict[str, Any] | UnsetType | None = UNSET  # structured output: a JSON schema
    task_budget: dict[str, Any] | UnsetType | None = UNSET


class ThreadIn(_In):
    """Server-held conversation state: `create` asks the upstream to keep it, `continue`
    resumes from `previous_message_id`."""

    type: Literal["create", "continue"]
    previous_message_id: str | UnsetType = UNSET


class McpToolConfiguration(_In):
    enabled: bool | UnsetType = UNSET
    allowed_tools: list[str] | UnsetType | None = UNSET


class McpServerIn(_In):
    """A server of the MCP connector (`mcp_servers`): served by the gateway only when its
    URL is a catalogued tool server the policy admits (`llmeu.api.call.hosted_mcp`)."""

    url: str
    name: str
    type: str = "url"
    authorization_token: str | UnsetType | None = UNSET
    tool_configuration: McpToolConfiguration | UnsetType | None = UNSET


class MessagesRequest(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """`POST /v1/messages` (and `count_tokens`, which has no `max_tokens`): every field of
    Anthropic's request (docs/messages.md, "Request fields")."""

    model: Annotated[str, Meta(min_length=1, max_length=256)]
    messages: Annotated[list[MessageIn], Meta(min_length=1)]
    max_tokens: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    system: str | list[TextBlockIn] | UnsetType = UNSET
    tools: list[dict[str, Any]] | UnsetType = UNSET
    tool_choice: ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone | UnsetType = (
        UNSET
    )
    stop_sequences: list[str] | UnsetType = UNSET
    temperature: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    top_p: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    top_k: Annotated[int, Meta(ge=0)] | UnsetType = UNSET
    metadata: MetadataIn | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET
    stream: bool | UnsetType = UNSET
    output_config: OutputConfig | UnsetType | None = UNSET
    thread: ThreadIn | UnsetType | None = UNSET
    compaction: dict[str, Any] | UnsetType | None = UNSET
    # Accepted without effect (`ignored_fields`): where, how fast and for whom a call runs
    # is the route's (the policy's) to decide, a prompt cache and context editing are the
    # upstream's, and llmeu has no workspaces. (Anthropic's SDKs send `workspace_id` and
    # `user_profile_id` as headers.) `mcp_servers` is served by the gateway (hosted_mcp).
    container: str | dict[str, Any] | UnsetType | None = UNSET
    service_tier: str | UnsetType | None = UNSET
    inference_geo: str | UnsetType | None = UNSET
    speed: str | UnsetType | None = UNSET
    cache_control: dict[str, Any] | UnsetType | None = UNSET
    diagnostics: dict[str, Any] | UnsetType | None = UNSET
    context_management: dict[str, Any] | UnsetType | None = UNSET
    fallbacks: str | list[dict[str, Any]] | UnsetType | None = UNSET
    fallback_credit_token: str | dict[str, Any] | UnsetType | None = UNSET
    billing_policy: dict[str, Any] | UnsetType | None = UNSET
    workspace_id: str | UnsetType | None = UNSET
    user_profile_id: str | UnsetType | None = UNSET
    mcp_servers: list[McpServerIn] | UnsetType = UNSET
    llmeu: RoutingRequest | UnsetType | None = UNSET


messages_request_decoder = msgspec.json.Decoder(MessagesRequest)


_WITHOUT_EFFECT = (
    "container", "service_tier", "inference_geo", "speed", "cache_control", "diagnostics",
    "context_management", "fallbacks", "fallback_credit_token", "billing_policy",
    "workspace_id", "user_profile_id",
)  # fmt: skip


_without_effect = attrgetter(*_WITHOUT_EFFECT)


def ignored_fields(request: MessagesRequest) -> list[str]:
    """The fields `request` sets that llmeu accepts without effect (docs/messages.md,
    "Request fields"), for the trace's `ignored_features`."""
    found = set_fields(_WITHOUT_EFFECT, _without_effect(request))
    config = request.output_config
    if isinstance(config, OutputConfig):
        found += [
            f"output_config.{name}"
            for name in ("effort", "task_budget")
            if getattr(config, name) not in (UNSET, None)
        ]
    if isinstance(request.thread, ThreadIn) and request.thread.type == "create":
        found.append("thread")
    return found


def system_text(request: MessagesRequest) -> str:
    system = request.system
    if isinstance(system, str):
        return system
    return "\n".join(block.text for block in system) if isinstance(system, list) else ""


def prompt_texts(request: MessagesRequest) -> list[str]:
    """Every text of the prompt: kept out of error messages, counted for estimates."""
    texts = [system_text(request)]
    for message in request.messages:
        if isinstance(message.content, str):
            texts.append(message.content)
            continue
        for block in message.content:
            if isinstance(block, TextBlockIn):
                texts.append(block.text)
            elif isinstance(block, ToolResultBlockIn):
                texts.append(result_text(block))
            elif isinstance(block, ToolUseBlockIn):
                texts.append(encoder.encode(block.input).decode())
            elif isinstance(block, ThinkingBlockIn):
                texts.append(block.thinking)
    return [t for t in texts if t]


def result_text(block: ToolResultBlockIn) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.text for b in content if isinstance(b, TextBlockIn))
    return ""
