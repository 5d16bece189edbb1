"""Every string a surface forwards to an upstream is scanned, and masking reaches every one.

The request of each surface is generated from its model (msgspec's type
information): every field set, every string a unique e-mail address (`k7@…`),
one item of each kind in every list. A field added to a request model is
generated too, without this test naming it. Each request then goes the way
the gateway sends it: decoded, mapped onto the chat request, and written by
every kind of upstream's own request builder (OpenAI-compatible, Anthropic's
Messages, a Responses API passed through). Every address that reaches one of
those bodies must be in a part the scan read (or in a part it reports as not
scanned: an image, a file), and after masking no address may reach one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import msgspec
import pytest
from msgspec import UNSET, inspect
from msgspec.structs import replace

from llmeu.api.call.governance import chat_intent, with_hosted
from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.request import ChatRequest
from llmeu.calls.tool_forms import function_form
from llmeu.errors import InvalidRequest
from llmeu.personal import chat_text
from llmeu.personal.chat_text import chat_parts, rewritten
from llmeu.personal.responses_text import responses_parts, responses_rewritten
from llmeu.personal.rules import Action, Detector, PersonalDataRules
from llmeu.personal.scan import Screening, screen
from llmeu.protocol.messages_codec import server_tools, to_chat_request
from llmeu.protocol.messages_request import MessagesRequest
from llmeu.protocol.messages_upstream import anthropic_request
from llmeu.protocol.responses_tools import chat_tools
from llmeu.protocol.responses_upstream import native_body
from llmeu.protocol.responses_wire import ResponsesRequest, to_chat
from llmeu.routing.endpoint_kinds import messages_native

MARK = re.compile(r"k\d+@example\.eu")
MASK = PersonalDataRules(actions=((Detector.EMAIL, Action.MASK),))


class Sample:
    """A request of `kind` as JSON, every field set, each string a new address."""

    def __init__(self, overrides: dict[str, Callable[[], Any]] | None = None) -> None:
        self._numbers = count(1)
        self._overrides = overrides or {}

    def of(self, kind: type[msgspec.Struct]) -> dict[str, Any]:
        made: dict[str, Any] = self.value(inspect.type_info(kind), "")
        return made

    def mark(self) -> str:
        return f"k{next(self._numbers)}@example.eu"

    def value(self, kind: inspect.Type, path: str) -> Any:
        if path in self._overrides:
            return self._overrides[path]()
        if isinstance(kind, inspect.StructType):
            fields = {f.encode_name: self.value(f.type, f"{path}.{f.encode_name}".lstrip("."))
                      for f in kind.fields}  # fmt: skip
            return {kind.tag_field: kind.tag, **fields} if kind.tag_field else fields
        if isinstance(kind, inspect.UnionType):
            return self.value(max(kind.types, key=_richness), path)
        if isinstance(kind, inspect.ListType):
            return list(self.items(kind.item_type, path))[: kind.max_length or None]
        if isinstance(kind, inspect.DictType):
            return {"note": self.value(kind.value_type, f"{path}.note")}
        return self.scalar(kind)

    def items(self, kind: inspect.Type, path: str) -> Iterator[Any]:
        """One item of each member of a union, one per value of a struct's `Literal` field."""
        members = kind.types if isinstance(kind, inspect.UnionType) else (kind,)
        for member in members:
            literal = _literal_field(member)
            if literal is None:
                yield self.value(member, f"{path}[]")
                continue
            for choice in literal.type.values:  # type: ignore[attr-defined]
                yield {**self.value(member, f"{path}[]"), literal.encode_name: choice}

    def scalar(self, kind: inspect.Type) -> Any:
        if isinstance(kind, inspect.StrType):
            return self.mark()
        if isinstance(kind, inspect.LiteralType):
            return kind.values[0]
        if isinstance(kind, inspect.BoolType):
            return True
        if isinstance(kind, inspect.IntType):
            return kind.ge if kind.ge is not None else 1
        if isinstance(kind, inspect.FloatType):
            return kind.ge if kind.ge is not None else 0.5
        if isinstance(kind, inspect.AnyType):
            return {"note": self.mark()}
        return None


def _richness(kind: inspect.Type) -> int:
    """Which member of a union to generate: structure over a plain string, a value over null."""
    order = (inspect.StructType, inspect.ListType, inspect.DictType, inspect.StrType)
    return next((len(order) - i for i, t in enumerate(order) if isinstance(kind, t)), 0)


def _literal_field(kind: inspect.Type) -> inspect.Field | None:
    if not isinstance(kind, inspect.StructType):
        return None
    return next((f for f in kind.fields if isinstance(f.type, inspect.LiteralType)
                 and f.encode_name != kind.tag_field and len(f.type.values) > 1), None)  # fmt: skip


def accepted(make: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> Any:
    """`make(body)`, with every part the surface refuses (a 400 naming it) left out."""
    for _ in range(50):
        try:
            return make(body)
        except InvalidRequest as error:
            refused = error.param
        if refused is None:
            break
        _drop(body, refused)
    raise AssertionError("the surface refuses the generated request")


def _drop(body: Any, param: str) -> None:
    """Leave out the item (else the field) that `param` names."""
    keys: list[str | int] = [int(k) if k.isdigit() else k
                             for k in re.findall(r"[^.\[\]]+", param)]  # fmt: skip
    listed = max((i for i, k in enumerate(keys) if isinstance(k, int)), default=None)
    cut = keys[: listed + 1] if listed is not None else keys
    parent = body
    for key in cut[:-1]:
        parent = parent[key]
    del parent[cut[-1]]


def forwarded_markers(bodies: list[bytes]) -> set[str]:
    return {m for body in bodies for m in MARK.findall(body.decode())}


def read_markers(parts: list[tuple[str, str]]) -> set[str]:
    return {m for _, text in parts for m in MARK.findall(text)}


def opaque_markers(chat: ChatRequest, unscanned: list[str]) -> set[str]:
    """The addresses inside the parts reported as not scanned (images, files)."""
    document = msgspec.to_builtins(chat)
    found: set[str] = set()
    for path in unscanned:
        node = document
        for key in re.findall(r"[^.\[\]]+", path):
            node = node[int(key)] if key.isdigit() else node[key]
        found |= set(MARK.findall(json.dumps(node)))
    return found


def openai_body(chat: ChatRequest) -> bytes:
    """What an OpenAI-compatible endpoint gets: the chat request (custom tools in their
    function form), its model replaced."""
    upstream = function_form(chat)
    return msgspec.json.encode(replace(upstream, model="upstream-model", llmeu=UNSET))


def anthropic_body(chat: ChatRequest) -> bytes:
    return msgspec.json.encode(anthropic_request(function_form(chat), "upstream-model",
                                                 stream=False, default_max_tokens=None))  # fmt: skip


# Each surface: its generated request, what the scan reads of it, and the bodies it is sent
# as (`sent(masking)`: none, or the screening whose masking rewrites it first).
Surface = tuple[
    list[tuple[str, str]], list[str], ChatRequest, Callable[[Screening | None], list[bytes]]
]


def chat_surface() -> Surface:
    sample = Sample().of(ChatRequest)
    chat = accepted(lambda body: msgspec.convert(body, ChatRequest), sample)
    parts, unscanned = chat_parts(chat)

    def sent(screening: Screening | None) -> list[bytes]:
        masked = rewritten(chat, screening.masked) if screening else chat
        return [openai_body(masked), anthropic_body(masked)]

    return parts, unscanned, chat, sent


def messages_surface() -> Surface:
    """Client tools go on the chat request; a server tool goes whole, with its options, to an
    endpoint speaking Anthropic's wire (`with_hosted`: screened and masked with the prompt)."""
    sample = Sample({"tools": _messages_tools}).of(MessagesRequest)

    def translated(body: dict[str, Any]) -> tuple[ChatRequest, list[HostedTool]]:
        wire = msgspec.convert(body, MessagesRequest)
        return to_chat_request(wire), server_tools(wire)

    chat, hosted = accepted(translated, sample)
    intent = with_hosted(chat_intent(chat, stream=False, subject=None), hosted, messages_native)
    parts, unscanned = intent.parts(intent.prompt)

    def sent(screening: Screening | None) -> list[bytes]:
        masked, tools = intent.masked(intent.prompt, screening) if screening else intent.prompt
        body = anthropic_request(function_form(masked), "upstream-model", stream=False,
                                 default_max_tokens=None)  # fmt: skip
        body["tools"] = [*body["tools"], *(tool.as_sent() for tool in tools)]
        return [msgspec.json.encode(body), openai_body(masked)]

    return list(parts), list(unscanned), chat, sent


def _messages_tools() -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": _mark()}}}
    location = {"type": "approximate", "city": _mark(), "country": "FR"}
    return [
        {"name": _mark(), "description": _mark(), "input_schema": schema},
        {"type": "web_search_20250305", "name": "web_search", "allowed_domains": [_mark()],
         "user_location": location},
    ]  # fmt: skip


def responses_surface() -> Surface:
    sample = Sample({"input": _input_items, "tools": _tools, "tool_choice": _choice})
    made = sample.of(ResponsesRequest)

    def translated(body: dict[str, Any]) -> tuple[ResponsesRequest, ChatRequest]:
        req = msgspec.convert(body, ResponsesRequest)
        return req, to_chat(req, [], stream=False)

    req, chat = accepted(translated, made)
    parts, unscanned = responses_parts(req, chat)

    def sent(screening: Screening | None) -> list[bytes]:
        forwarded, masked = (req, chat)
        if screening:
            forwarded, masked = responses_rewritten(req, chat, screening.masked)
        hosted = [f"tools[{i}]" for i in range(len(made["tools"]))]  # every one goes upstream
        return [native_body(forwarded, masked, "upstream-model", stream=False,
                            namespaced=chat_tools(forwarded.tools).namespaced, hosted=hosted),
                openai_body(masked)]  # fmt: skip

    return parts, unscanned, chat, sent


MARKS = count(10_000)


def _mark() -> str:
    return f"k{next(MARKS)}@example.eu"


def _input_items() -> list[dict[str, Any]]:
    text = [{"type": "input_text", "text": _mark()}]
    return [
        {"type": "message", "role": "user", "content": _mark()},
        {"type": "message", "role": "developer", "content": text},
        {"type": "message", "role": "user",
         "content": [*text, {"type": "input_image", "image_url": f"https://{_mark()}"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": _mark()}, {"type": "refusal", "refusal": _mark()}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": _mark()}],
         "encrypted_content": _mark()},
        {"type": "function_call", "call_id": _mark(), "name": _mark(), "arguments": _mark()},
        {"type": "function_call_output", "call_id": _mark(), "output": _mark()},
        {"type": "custom_tool_call", "call_id": _mark(), "name": _mark(), "input": _mark()},
        {"type": "custom_tool_call_output", "call_id": _mark(), "output": _mark()},
        {"type": "function_call", "call_id": _mark(), "name": "n", "namespace": "ns",
         "arguments": _mark()},
    ]  # fmt: skip


def _tools() -> list[dict[str, Any]]:
    """A tool of each kind: a function, a custom tool with a grammar, a namespace, a hosted
    tool with options."""
    parameters = {"type": "object", "properties": {"a": {"type": "string", "description": _mark()}}}
    grammar = {"type": "grammar", "syntax": "lark", "definition": f'start: "{_mark()}"'}
    inner = {"type": "function", "name": "n", "description": _mark(), "parameters": parameters}
    return [
        {"type": "function", "name": _mark(), "description": _mark(), "parameters": parameters},
        {"type": "custom", "name": "c", "description": _mark(), "format": grammar},
        {"type": "namespace", "name": "ns", "description": _mark(), "tools": [inner]},
        {"type": "web_search", "filters": {"allowed_domains": [_mark()]}},
    ]


def _choice() -> dict[str, Any]:
    return {"type": "function", "name": _mark()}


SURFACES = {"chat": chat_surface, "messages": messages_surface, "responses": responses_surface}


@pytest.mark.parametrize("surface", list(SURFACES))
def test_every_forwarded_string_is_read_by_the_scan(surface: str) -> None:
    parts, unscanned, chat, sent = SURFACES[surface]()
    forwarded = forwarded_markers(sent(None))
    assert len(forwarded) > 15  # the generated request reaches the upstreams' bodies
    assert forwarded - read_markers(parts) - opaque_markers(chat, unscanned) == set()


@pytest.mark.parametrize("surface", list(SURFACES))
def test_masking_rewrites_every_forwarded_string(surface: str) -> None:
    parts, unscanned, chat, sent = SURFACES[surface]()
    screening = screen(parts, [], MASK, "p")
    assert screening.masking is not None
    assert forwarded_markers(sent(screening)) <= opaque_markers(chat, unscanned)


def test_a_field_the_walk_left_out_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: were `metadata` and `user` not read, their addresses get through."""
    monkeypatch.setattr(chat_text, "NOT_FORWARDED", chat_text.NOT_FORWARDED | {"metadata", "user"})
    parts, unscanned, chat, sent = chat_surface()
    missed = forwarded_markers(sent(None)) - read_markers(parts) - opaque_markers(chat, unscanned)
    assert missed == {chat.metadata["note"], chat.user}  # type: ignore[index]
