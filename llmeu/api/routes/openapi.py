"""GET /openapi.json: the gateway's OpenAPI 3.1 description.

Request and response bodies come from the msgspec types that decode and
encode them (`msgspec.json.schema_components`), so the schema cannot drift
from what the gateway accepts; the paths, parameters and statuses are written
here. Property-based tests (schemathesis) send generated input from it to
every route.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from llmeu.api.http.asgi import Request
from llmeu.api.routes.platform import KeyCreate
from llmeu.calls.record import FINAL_STATUSES, CallStatus
from llmeu.calls.request import ChatRequest
from llmeu.ledger.store import USAGE_GROUPS
from llmeu.protocol.chat_wire import ChatCompletion, ChatCompletionChunk
from llmeu.protocol.embeddings_wire import EmbeddingsRequest, EmbeddingsResponse
from llmeu.protocol.error_shape import ErrorDetail
from llmeu.protocol.messages_request import MessagesRequest
from llmeu.protocol.responses_object import ResponseObject
from llmeu.protocol.responses_wire import ResponsesRequest


class ErrorBody(msgspec.Struct):
    """Every error's body (the `llmeu` block is there when a trace exists)."""

    error: ErrorDetail
    llmeu: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


_REF = "#/components/schemas/{name}"
_ERRORS = {
    "400": "invalid request",
    "401": "missing or invalid API key",
    "403": "forbidden by policy or role",
    "404": "unknown model, route or record",
    "405": "method not allowed",
    "413": "request body too large",
    "429": "rate, token or budget limit (with Retry-After)",
    "502": "upstream failure",
    "503": "upstream or gateway unavailable",
    "504": "upstream timeout",
}
_OBJECT = {"type": "object"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _operation(
    summary: str,
    ok: dict[str, Any],
    *,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    public: bool = False,
    ok_status: str = "200",
) -> dict[str, Any]:
    error = {"$ref": "#/components/schemas/ErrorBody"}
    responses: dict[str, Any] = {ok_status: {"description": "success", "content": ok}}
    for status, description in _ERRORS.items():
        responses[status] = {"description": description, "content": _json(error)}
    operation: dict[str, Any] = {"summary": summary, "responses": responses}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json(body)}
    if params:
        operation["parameters"] = params
    if public:
        operation["security"] = []
    return operation


_ANTHROPIC_ERROR = {
    "type": "object",
    "required": ["type", "error"],
    "properties": {
        "type": {"const": "error"},
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}


def _anthropic_errors(operation: dict[str, Any]) -> dict[str, Any]:
    """The Messages routes answer errors in Anthropic's shape (and 529 when overloaded)."""
    for status, response in operation["responses"].items():
        if status != "200":
            response["content"] = _json(_ANTHROPIC_ERROR)
    return operation


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema or {"type": "string"}}


@functools.cache
def openapi_document() -> bytes:
    types = [
        ChatRequest,
        ChatCompletion,
        ChatCompletionChunk,
        EmbeddingsRequest,
        EmbeddingsResponse,
        ErrorBody,
        KeyCreate,
        ResponsesRequest,
        ResponseObject,
        MessagesRequest,
    ]
    refs, components = msgspec.json.schema_components(types, ref_template=_REF)
    chat_req, chat, chunk, emb_req, emb, _, key_create, resp_req, resp, messages_req = refs
    # The canonical request is this route's body: published under the route's own name.
    components["ChatCompletionRequest"] = components.pop("ChatRequest")
    chat_req = {"$ref": _REF.format(name="ChatCompletionRequest")}
    statuses = [s.value for s in (*FINAL_STATUSES, CallStatus.IN_PROGRESS)]
    window = [_query("from"), _query("to")]
    paths: dict[str, Any] = {
        "/v1/chat/completions": {
            "post": _operation(
                "Chat completion; streams server-sent events with `stream: true`",
                {**_json(chat), "text/event-stream": {"schema": chunk}},
                body=chat_req,
            )
        },
        "/v1/responses": {
            "post": _operation(
                "Responses API; streams typed server-sent events with `stream: true`",
                {**_json(resp), "text/event-stream": {"schema": {"type": "string"}}},
                body=resp_req,
            )
        },
        "/v1/responses/{response_id}": {
            "get": _operation(
                "A stored response (the calling key's)",
                _json(resp),
                params=[_path_param("response_id")],
            ),
            "delete": _operation(
                "Delete a stored response", _json(_OBJECT), params=[_path_param("response_id")]
            ),
        },
        "/v1/responses/{response_id}/input_items": {
            "get": _operation(
                "The input items of a stored response",
                _json(_OBJECT),
                params=[
                    _path_param("response_id"),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 100}),
                    _query("order", {"type": "string", "enum": ["asc", "desc"]}),
                    _query("after"),
                ],
            )
        },
        "/v1/embeddings": {"post": _operation("Embeddings", _json(emb), body=emb_req)},
        "/v1/messages": {
            "post": _anthropic_errors(
                _operation(
                    "Anthropic Messages; streams Anthropic's events with `stream: true`",
                    {**_json(_OBJECT), "text/event-stream": {"schema": _OBJECT}},
                    body=messages_req,
                )
            )
        },
        "/v1/messages/count_tokens": {
            "post": _anthropic_errors(
                _operation("A Messages prompt's input tokens", _json(_OBJECT), body=messages_req)
            )
        },
        "/v1/models": {"get": _operation("Models the caller's policy can reach", _json(_OBJECT))},
        "/v1/models/{model}": {
            "get": _operation("One model", _json(_OBJECT), params=[_path_param("model")])
        },
        "/v1/platform/keys": {
            "post": _operation(
                "Create a key (admin)", _json(_OBJECT), body=key_create, ok_status="201"
            ),
            "get": _operation("List keys (admin)", _json(_OBJECT)),
        },
        "/v1/platform/keys/{key_id}": {
            "delete": _operation(
                "Revoke a key (admin)", _json(_OBJECT), params=[_path_param("key_id")]
            )
        },
        "/v1/platform/me": {
            "get": _operation("The calling key: its id, name, policy and role", _json(_OBJECT))
        },
        "/v1/platform/policies": {"get": _operation("List policies", _json(_OBJECT))},
        "/v1/platform/policies/{policy_id}": {
            "get": _operation("One policy", _json(_OBJECT), params=[_path_param("policy_id")]),
            "put": _operation(
                "Create or replace a policy (admin)",
                _json(_OBJECT),
                body=_OBJECT,
                params=[_path_param("policy_id")],
            ),
        },
        "/v1/platform/endpoints": {"get": _operation("The catalog and its health", _json(_OBJECT))},
        "/v1/platform/reload": {
            "post": _operation(
                "Read the configuration file again, in every gateway process (admin)",
                _json(_OBJECT),
            )
        },
        "/v1/platform/usage": {
            "get": _operation(
                "Usage, grouped",
                _json(_OBJECT),
                params=[
                    _query("group_by", {"type": "string", "enum": list(USAGE_GROUPS)}),
                    *window,
                ],
            )
        },
        "/v1/platform/traces": {
            "get": _operation(
                "Traces, newest first",
                _json(_OBJECT),
                params=[
                    _query("status", {"type": "string", "enum": statuses}),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                    _query("cursor"),
                    _query("model"),
                    *window,
                ],
            )
        },
        "/v1/platform/traces/{trace_id}": {
            "get": _operation("One trace", _json(_OBJECT), params=[_path_param("trace_id")])
        },
        "/v1/platform/traces/{trace_id}/receipt": {
            "get": _operation(
                "The trace's signed receipt (compact JWS, EdDSA)",
                _json(_OBJECT),
                params=[_path_param("trace_id")],
            )
        },
        "/.well-known/llmeu/jwks.json": {
            "get": _operation(
                "The public keys that verify receipts and checkpoints (JWKS)",
                {"application/jwk-set+json": {"schema": _OBJECT}},
                public=True,
            )
        },
        "/v1/platform/holds": {
            "post": _operation(
                "Place a legal hold on one key's traces or on all (admin)",
                _json(_OBJECT),
                body=_OBJECT,
                ok_status="201",
            ),
            "get": _operation("Legal holds, released ones included (admin)", _json(_OBJECT)),
        },
        "/v1/platform/holds/{hold_id}": {
            "delete": _operation(
                "Release a legal hold (admin)", _json(_OBJECT), params=[_path_param("hold_id")]
            )
        },
        "/v1/platform/subjects/{user_id}": {
            "delete": _operation(
                "Erase the stored content of one end user's calls; metadata stays (admin)",
                _json(_OBJECT),
                params=[_path_param("user_id")],
            )
        },
        "/v1/platform/erasures": {
            "get": _operation("Erasures by data subject, as recorded (admin)", _json(_OBJECT))
        },
        "/v1/platform/exports/{name}": {
            "get": _operation(
                "Records of processing, subprocessors or call metadata for a period (admin)",
                {
                    "application/json": {"schema": _OBJECT},
                    "text/markdown": {"schema": {"type": "string"}},
                    "text/csv": {"schema": {"type": "string"}},
                    "application/x-ndjson": {"schema": {"type": "string"}},
                },
                params=[_path_param("name"), *window],
            )
        },
        "/healthz": {"get": _operation("Liveness and ledger state", _json(_OBJECT), public=True)},
        "/readyz": {
            "get": _operation(
                "Readiness: the ledger answers, the configuration and local models are loaded",
                _json(_OBJECT),
                public=True,
            )
        },
        "/metrics": {
            "get": _operation(
                "Prometheus metrics (no tenant data)",
                {"text/plain": {"schema": {"type": "string"}}},
                public=True,
            )
        },
        "/openapi.json": {"get": _operation("This document", _json(_OBJECT), public=True)},
    }
    document = {
        "openapi": "3.1.0",
        "info": {"title": "llmeu", "version": "1", "description": "OpenAI-compatible EU gateway"},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
    return msgspec.json.encode(document)


async def handle_openapi(request: Request) -> None:
    await request.respond(200, openapi_document())
