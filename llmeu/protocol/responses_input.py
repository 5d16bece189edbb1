"""The Responses request's `input` items, checked one by one and made chat messages.

Items arrive as JSON values (`ResponsesRequest.input`) and are converted here
one at a time, so each error names its item (`input[2].call_id`). A `message`
item becomes a chat message, a `function_call` (or `custom_tool_call`) an
assistant tool call, a `function_call_output` (or `custom_tool_call_output`)
a tool message, a `reasoning` item the thinking block of the next assistant
turn. A call of a namespace's tool names its namespace; upstream that tool is
one of its own, named `namespace__name` (`flat_name`). The tools are in
`llmeu.protocol.responses_tools`.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from llmeu.calls.request import (
    AssistantMessage,
    ContentPart,
    FilePart,
    FileRef,
    ImagePart,
    ImageURL,
    Message,
    RedactedThinkingBlock,
    RefusalPart,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
)
from llmeu.calls.tools import CustomCall, CustomToolCall, FunctionCall, ToolCall
from llmeu.errors import InvalidRequest
from llmeu.protocol.error_shape import describe_validation_error


class Lenient(Struct, omit_defaults=True):
    """Base of nested request objects: unknown fields ignored (SDKs echo output items back)."""


class _Part(Lenient):
    type: str
    text: str | UnsetType = UNSET
    refusal: str | UnsetType = UNSET
    image_url: str | UnsetType | None = UNSET
    file_id: str | UnsetType | None = UNSET
    detail: str | UnsetType | None = UNSET
    file_data: str | UnsetType | None = UNSET
    filename: str | UnsetType | None = UNSET
    file_url: str | UnsetType | None = UNSET


class _MessageItem(Lenient):
    role: Literal["user", "system", "developer", "assistant"]
    content: str | list[_Part]
    type: Literal["message"] = "message"


class _FunctionCallItem(Lenient):
    call_id: Annotated[str, Meta(min_length=1)]
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    arguments: str
    namespace: Annotated[str, Meta(min_length=1, max_length=64)] | UnsetType | None = UNSET


class _CustomCallItem(Lenient):
    call_id: Annotated[str, Meta(min_length=1)]
    name: Annotated[str, Meta(min_length=1, max_length=64)]
    input: str
    namespace: Annotated[str, Meta(min_length=1, max_length=64)] | UnsetType | None = UNSET


class _FunctionCallOutputItem(Lenient):
    call_id: Annotated[str, Meta(min_length=1)]
    output: str | list[_Part]


FUNCTION_NAME_LIMIT = 64
"""The longest function name upstreams take (OpenAI's limit)."""


def flat_name(namespace: str, name: str) -> str:
    """The name upstream of a namespace's tool: `namespace__name`, or, when that is longer than
    a function name may be, its start and a digest of the whole (so two stay apart)."""
    flat = f"{namespace}__{name}"
    if len(flat) <= FUNCTION_NAME_LIMIT:
        return flat
    digest = hashlib.sha256(flat.encode()).hexdigest()[:8]
    return f"{flat[: FUNCTION_NAME_LIMIT - 9]}_{digest}"


def _upstream_name(item: _FunctionCallItem | _CustomCallItem) -> str:
    namespace = item.namespace
    return flat_name(namespace, item.name) if isinstance(namespace, str) else item.name


class _Text(Lenient):
    text: str


class _ReasoningItem(Lenient):
    summary: list[_Text] = []
    content: list[_Text] | UnsetType | None = UNSET
    encrypted_content: str | UnsetType | None = UNSET


def convert(value: object, kind: type[Any], param: str) -> Any:
    """`value` as `kind`, or a 400 whose `param` is the path below `param`."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as error:
        message, path = describe_validation_error(str(error))
        raise InvalidRequest(
            f"Invalid request: {message}", param=f"{param}.{path}" if path else param
        ) from None


def _content_part(part: _Part, param: str, assistant: bool) -> ContentPart:
    kind = part.type
    if kind in ("input_text", "output_text", "text") and isinstance(part.text, str):
        return TextPart(text=part.text)
    if kind == "refusal" and assistant and isinstance(part.refusal, str):
        return RefusalPart(refusal=part.refusal)
    if kind == "input_image" and not assistant:
        if not isinstance(part.image_url, str):
            raise InvalidRequest(
                "input_image needs an image_url (a URL or a data: URL); llmeu keeps no files",
                param=f"{param}.image_url",
            )
        detail = part.detail if isinstance(part.detail, str) else UNSET
        return ImagePart(image_url=ImageURL(url=part.image_url, detail=detail))
    if kind == "input_file" and not assistant:
        if not isinstance(part.file_data, str):
            raise InvalidRequest(
                "input_file needs file_data (base64); llmeu keeps no files",
                param=f"{param}.file_data",
            )
        filename = part.filename if isinstance(part.filename, str) else UNSET
        return FilePart(file=FileRef(file_data=part.file_data, filename=filename))
    raise InvalidRequest(
        f"content part type {kind!r} is not valid here, or misses its field",
        param=f"{param}.type",
    )


def _message(item: _MessageItem, param: str) -> Message:
    content = item.content
    assistant = item.role == "assistant"
    if isinstance(content, list):
        parts = [
            _content_part(p, f"{param}.content[{j}]", assistant) for j, p in enumerate(content)
        ]
        if item.role in ("system", "developer"):
            texts = [p for p in parts if isinstance(p, TextPart)]
            if len(texts) != len(parts):
                raise InvalidRequest(
                    f"a {item.role} message holds text only", param=f"{param}.content"
                )
            return SystemMessage(content=texts)
        if assistant:
            return AssistantMessage(content=[p for p in parts if isinstance(p, TextPart)] or None)
        return UserMessage(content=parts)
    if item.role in ("system", "developer"):
        return SystemMessage(content=content)
    if assistant:
        return AssistantMessage(content=content)
    return UserMessage(content=content)


class _Conversation:
    """Chat messages built from input items: an assistant turn collects the function calls and
    reasoning that belong to it."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._turn: AssistantMessage | None = None

    def add(self, message: Message) -> None:
        self._close_turn()
        if isinstance(message, AssistantMessage):
            self._turn = message
        else:
            self.messages.append(message)

    def tool_call(self, item: _FunctionCallItem | _CustomCallItem) -> None:
        turn = self._open_turn()
        calls = turn.tool_calls if isinstance(turn.tool_calls, list) else []
        name = _upstream_name(item)
        if isinstance(item, _CustomCallItem):
            calls.append(CustomToolCall(item.call_id, CustomCall(name, item.input)))
        else:
            calls.append(ToolCall(item.call_id, FunctionCall(name, item.arguments)))
        turn.tool_calls = calls

    def reasoning(self, item: _ReasoningItem) -> None:
        if self._turn is not None and (self._turn.content or self._turn.tool_calls):
            self._close_turn()
        turn = self._open_turn()
        blocks = turn.thinking_blocks if isinstance(turn.thinking_blocks, list) else []
        text = "".join(t.text for t in (item.content or item.summary))
        if text:  # the upstream's opaque token stays with its text, as a signature does
            token = item.encrypted_content
            blocks.append(ThinkingBlock(thinking=text, signature=token if token else UNSET))
        elif isinstance(item.encrypted_content, str):
            blocks.append(RedactedThinkingBlock(data=item.encrypted_content))
        turn.thinking_blocks = blocks or UNSET

    def done(self) -> list[Message]:
        self._close_turn()
        return self.messages

    def _open_turn(self) -> AssistantMessage:
        if self._turn is None:
            self._turn = AssistantMessage(content=None)
        return self._turn

    def _close_turn(self) -> None:
        if self._turn is not None:
            self.messages.append(self._turn)
            self._turn = None


def input_messages(items: str | list[Any] | UnsetType) -> list[Message]:
    """The chat messages the request's `input` stands for."""
    if isinstance(items, UnsetType):
        return []
    if isinstance(items, str):
        return [UserMessage(content=items)]
    conversation = _Conversation()
    for i, raw in enumerate(items):
        param = f"input[{i}]"
        if not isinstance(raw, dict):
            raise InvalidRequest("an input item is a JSON object", param=param)
        kind = raw.get("type", "message" if "role" in raw else None)
        if kind == "message":
            conversation.add(_message(convert(raw, _MessageItem, param), param))
        elif kind == "function_call":
            conversation.tool_call(convert(raw, _FunctionCallItem, param))
        elif kind == "custom_tool_call":
            conversation.tool_call(convert(raw, _CustomCallItem, param))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = convert(raw, _FunctionCallOutputItem, param)
            content = output.output
            if isinstance(content, list):
                content = "".join(p.text for p in content if isinstance(p.text, str))
            conversation.add(ToolMessage(content=content, tool_call_id=output.call_id))
        elif kind == "reasoning":
            conversation.reasoning(convert(raw, _ReasoningItem, param))
        else:
            raise InvalidRequest(
                f"input item type {kind!r} is not supported by llmeu (message, function_call, "
                "function_call_output, custom_tool_call, custom_tool_call_output and reasoning "
                "are)",
                param=f"{param}.type",
            )
    return conversation.done()


_ITEM_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco",
                  "custom_tool_call": "ctc", "custom_tool_call_output": "ctco",
                  "reasoning": "rs"}  # fmt: skip


def input_item_list(items: str | list[Any] | UnsetType, response_id: str) -> list[dict[str, Any]]:
    """The request's input as items with ids, as `GET /v1/responses/{id}/input_items` lists
    them: a string is one user message; an item without an id gets one."""
    if isinstance(items, UnsetType):
        return []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": items}]}]  # fmt: skip
    listed = []
    for i, raw in enumerate(items):
        item = dict(raw)
        kind = str(item.setdefault("type", "message"))
        if isinstance(item.get("content"), str):
            part = "output_text" if item.get("role") == "assistant" else "input_text"
            item["content"] = [{"type": part, "text": item["content"]}]
        if not item.get("id"):
            item["id"] = f"{_ITEM_PREFIXES.get(kind, 'item')}_{response_id[5:]}i{i:02d}"
        listed.append(item)
    return listed
