"""Every field the official SDKs send is accepted, read from their request types at run time.

The fields come from the installed `openai` and `anthropic` SDKs' request
TypedDicts (chat completions, Responses, Messages with its beta fields,
count_tokens), never from a list kept here; each field's example values (every
alternative of its type, see `tests.support.sdk_requests`) go through the
SDK's own `create`, and the body it sends must:

- decode (no unknown field, no type error, nested objects included);
- be served, or be refused naming that very field where the surface's
  "Request fields" table (docs/surfaces.md, responses.md, messages.md) says it
  can be (a value llmeu cannot honour);
- be named on the trace (`ignored_fields`) exactly where that table says
  "without effect".

A new SDK release that adds a field fails here until the field is decoded and
documented. OpenAI's published OpenAPI document (its request schemas, trimmed
in `tests/support/openai_request_schema.json`) is held to the same decoder and
tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from anthropic.types import message_count_tokens_params, message_create_params
from anthropic.types.beta import message_count_tokens_params as beta_count_tokens_params
from anthropic.types.beta import message_create_params as beta_message_create_params
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from llmeu.calls.request import ChatRequest, StreamOptions
from llmeu.errors import ApiError
from llmeu.protocol import chat_wire, messages_request, responses_wire
from llmeu.protocol.messages_codec import check_state, to_chat_request
from llmeu.protocol.messages_request import MessagesRequest, messages_request_decoder
from llmeu.protocol.responses_tools import request_tools
from llmeu.protocol.responses_wire import ReasoningConfig, ResponsesRequest, TextConfig
from llmeu.protocol.responses_wire import StreamOptions as ResponsesStreamOptions
from tests.support.sdk_requests import (
    SdkBodies,
    anthropic_bodies,
    fields,
    openai_bodies,
    variants,
)

DOCS = Path(__file__).parents[2] / "docs"
OPENAPI = json.loads(
    (Path(__file__).parents[1] / "support" / "openai_request_schema.json").read_text()
)["components"]["schemas"]
USER = [{"role": "user", "content": "hi"}]
FUNCTION = {"name": "f", "parameters": {"type": "object"}}


@dataclass
class Surface:
    """One request type: how the SDK sends it and how llmeu reads it."""

    name: str
    params: list[type[Any]]  # the SDK's TypedDicts for this body (all their fields count)
    sdk: Callable[[], SdkBodies]
    base: dict[str, Any]
    fields_table: tuple[str, str]  # the page of docs/ and the heading its table is under
    decode: Callable[[bytes], Any]
    serve: Callable[[Any], object]
    ignored: Callable[[Any], list[str]]
    # What a field needs beside it to mean anything, as the API itself requires.
    companions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def bodies(self, name: str) -> list[dict[str, Any]]:
        hint = next(fields(p)[name] for p in self.params if name in fields(p))
        sdk = self.sdk()
        extra = self.companions.get(name, {})
        return [sdk.body(**self.base, **extra, **{name: value}) for value in variants(hint)]

    def field_names(self) -> list[str]:
        """The fields the SDK sends in the body (some, such as Anthropic's `workspace_id`
        and `betas`, it sends as headers)."""
        names = {name for params in self.params for name in fields(params)} - set(self.base)
        return sorted(name for name in names if name in self.bodies(name)[0])


def _responses_served(req: ResponsesRequest) -> object:
    responses_wire.check_request(req)
    request_tools(req.tools)
    return responses_wire.to_chat(req, [], stream=True)


def _messages_served(wire: MessagesRequest) -> object:
    check_state(wire)
    return to_chat_request(wire)


SURFACES = [
    Surface(
        "chat",
        [completion_create_params.CompletionCreateParamsStreaming],
        lambda: openai_bodies(lambda client: client.chat.completions.create),
        {"model": "m", "messages": USER, "stream": True},
        ("surfaces.md", "### Request fields"),
        chat_wire.chat_request_decoder.decode,
        chat_wire.accepted_chat,
        chat_wire.ignored_fields,
        {
            "tool_choice": {"tools": [{"type": "function", "function": FUNCTION}]},
            "parallel_tool_calls": {"tools": [{"type": "function", "function": FUNCTION}]},
            "function_call": {"functions": [FUNCTION]},
        },
    ),
    Surface(
        "responses",
        [response_create_params.ResponseCreateParamsStreaming],
        lambda: openai_bodies(lambda client: client.responses.create),
        {"model": "m", "input": "hi", "stream": True},
        ("responses.md", "## Request fields (Responses)"),
        msgspec.json.Decoder(ResponsesRequest).decode,
        _responses_served,
        lambda req: responses_wire.ignored_fields(req, native=False),
        {"tool_choice": {"tools": [{"type": "function", **FUNCTION}]}},
    ),
    Surface(
        "messages",
        [
            message_create_params.MessageCreateParamsStreaming,
            beta_message_create_params.MessageCreateParamsStreaming,
        ],
        lambda: anthropic_bodies(lambda client: client.beta.messages.create),
        {"model": "m", "max_tokens": 5, "messages": USER, "stream": True},
        ("messages.md", "## Request fields (Messages)"),
        messages_request_decoder.decode,
        _messages_served,
        messages_request.ignored_fields,
        {"tool_choice": {"tools": [{"name": "f", "input_schema": {"type": "object"}}]}},
    ),
    Surface(
        "count_tokens",
        [
            message_count_tokens_params.MessageCountTokensParams,
            beta_count_tokens_params.MessageCountTokensParams,
        ],
        lambda: anthropic_bodies(lambda client: client.beta.messages.count_tokens),
        {"model": "m", "messages": USER},
        ("messages.md", "## Request fields (Messages)"),
        messages_request_decoder.decode,
        to_chat_request,
        messages_request.ignored_fields,
        {"tool_choice": {"tools": [{"name": "f", "input_schema": {"type": "object"}}]}},
    ),
]

CASES = [
    pytest.param(surface, name, id=f"{surface.name}-{name}")
    for surface in SURFACES
    for name in surface.field_names()
]


def _table_rows(table: tuple[str, str]) -> dict[str, str]:
    """The first table after the heading on the page: each backticked field of a row's first
    cell → the row's text."""
    page, heading = table
    text = (DOCS / page).read_text()
    start = text.index(f"\n{heading}\n")
    rows: dict[str, str] = {}
    in_table = False
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        first, _, rest = line.strip("|").partition("|")
        for name in re.findall(r"`([^`]+)`", first):
            rows[name] = rest
    return rows


def _root(path: str) -> str:
    return re.split(r"[.\[=]", path, maxsplit=1)[0]


@pytest.mark.parametrize(("surface", "name"), CASES)
def test_every_field_decodes(surface: Surface, name: str) -> None:
    failures = []
    for body in surface.bodies(name):
        try:
            surface.decode(json.dumps(body).encode())
        except msgspec.ValidationError as error:
            failures.append(f"{body[name]!r}: {error}")
    assert failures == []


@pytest.mark.parametrize(("surface", "name"), CASES)
def test_every_field_is_served_or_refused_where_documented(surface: Surface, name: str) -> None:
    row = _table_rows(surface.fields_table).get(name, "")
    refusable = "400" in row or "404" in row
    wrongly_refused = []
    for body in surface.bodies(name):
        request = surface.decode(json.dumps(body).encode())
        try:
            surface.serve(request)
        except ApiError as error:
            if not refusable or _root(error.param or "") != name:
                wrongly_refused.append((body[name], error))
    assert wrongly_refused == []


@pytest.mark.parametrize(("surface", "name"), CASES)
def test_the_trace_names_exactly_what_the_docs_say_is_without_effect(
    surface: Surface, name: str
) -> None:
    row = _table_rows(surface.fields_table)[name]
    named = set()
    for body in surface.bodies(name):
        named |= {
            _root(path) for path in surface.ignored(surface.decode(json.dumps(body).encode()))
        }
    assert named <= {name}
    assert (name in named) == ("without effect" in row), row


@pytest.mark.parametrize("surface", SURFACES, ids=[s.name for s in SURFACES])
def test_the_docs_document_no_field_llmeu_does_not_decode(surface: Surface) -> None:
    decoded = {
        "chat": ChatRequest,
        "responses": ResponsesRequest,
        "messages": MessagesRequest,
        "count_tokens": MessagesRequest,
    }[surface.name]
    documented = set(_table_rows(surface.fields_table))
    assert documented <= set(decoded.__struct_fields__)


def _openapi_properties(schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema's properties, through `$ref`, `allOf`, `anyOf` and `oneOf`."""
    if "$ref" in schema:
        return _openapi_properties(OPENAPI[schema["$ref"].rsplit("/", 1)[1]])
    found: dict[str, Any] = {}
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key, ()):
            found.update(_openapi_properties(part))
    found.update(schema.get("properties", {}))
    return found


@pytest.mark.parametrize(
    ("schema", "decoded", "heading", "nested"),
    [
        ("CreateChatCompletionRequest", ChatRequest, ("surfaces.md", "### Request fields"),
         {"stream_options": StreamOptions}),
        ("CreateResponse", ResponsesRequest, ("responses.md", "## Request fields (Responses)"),
         {"stream_options": ResponsesStreamOptions, "text": TextConfig,
          "reasoning": ReasoningConfig}),
    ],
    ids=["chat", "responses"],
)  # fmt: skip
def test_every_field_of_openais_published_document_is_decoded_and_documented(
    schema: str, decoded: type[Any], heading: tuple[str, str], nested: dict[str, type[Any]]
) -> None:
    properties = _openapi_properties(OPENAPI[schema])
    assert set(properties) <= set(decoded.__struct_fields__)
    assert set(properties) <= set(_table_rows(heading))
    for name, struct in nested.items():
        assert set(_openapi_properties(properties[name])) <= set(struct.__struct_fields__), name
