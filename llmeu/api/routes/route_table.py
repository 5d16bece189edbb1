"""The route table: every route the app serves, its handler, and its documentation.

`ROUTES` is declared once, without a running gateway, so that the OpenAPI
document (`llmeu.api.routes.openapi`) is generated from it; `route_table`
binds each handler to the gateway's services. A route added here is served
and documented; `tests/api/test_route_table.py` checks both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, Protocol

from llmeu.api.call.door import Calls
from llmeu.api.health import Health
from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape
from llmeu.api.http.route import OBJECT, TEXT, Doc, Handler, Param, Route
from llmeu.api.routes import (
    compliance,
    console,
    platform,
    receipt_keys,
    scim_routes,
    service,
    sign_in,
    team_routes,
    user_routes,
)
from llmeu.api.routes.chat_completions import handle_chat
from llmeu.api.routes.count_tokens import handle_count_tokens
from llmeu.api.routes.embeddings import handle_embeddings
from llmeu.api.routes.mcp import ERROR_SCHEMA, MCP_ERRORS, MESSAGE_SCHEMA, RESULT_SCHEMA, handle_mcp
from llmeu.api.routes.messages import ANTHROPIC_ERRORS, handle_messages
from llmeu.api.routes.models import handle_models
from llmeu.api.routes.openapi import build_document, handle_openapi
from llmeu.api.routes.responses import handle_responses
from llmeu.api.routes.responses_stored import (
    handle_delete_response,
    handle_get_response,
    handle_input_items,
)
from llmeu.api.services.compliance_service import Compliance
from llmeu.api.services.evidence_service import Evidence
from llmeu.api.services.platform_service import Platform
from llmeu.api.services.response_store import ResponseStore
from llmeu.calls.request import ChatRequest
from llmeu.observability.telemetry import Telemetry
from llmeu.protocol.chat_wire import ChatCompletion, ChatCompletionChunk
from llmeu.protocol.embeddings_wire import EmbeddingsRequest, EmbeddingsResponse
from llmeu.protocol.messages_request import MessagesRequest
from llmeu.protocol.responses_object import ResponseObject
from llmeu.protocol.responses_wire import ResponsesRequest


class Services(Protocol):
    """What the routes are bound to: the gateway's services (`llmeu.api.gateway.Gateway`)."""

    calls: Calls
    platform: Platform
    compliance: Compliance
    evidence: Evidence
    responses: ResponseStore
    telemetry: Telemetry
    started_at: float

    health: Health


@dataclass(frozen=True, slots=True)
class Spec:
    """A route before it is bound: `bind` gives the handler's leading arguments."""

    method: str
    path: str
    handler: Handler
    doc: Doc | None
    bind: Callable[[Services], tuple[Any, ...]] = lambda _: ()
    shape: ErrorShape = OPENAI_ERRORS


def _calls(s: Services) -> tuple[Any, ...]:
    return (s.calls,)


def _stored(s: Services) -> tuple[Any, ...]:
    return (s.calls, s.responses)


def _models(s: Services) -> tuple[Any, ...]:
    return (s.calls, s.started_at)


def _platform(s: Services) -> tuple[Any, ...]:
    return (s.platform,)


def _openapi(_: Services) -> tuple[Any, ...]:
    return (openapi_document(),)


@cache
def openapi_document() -> bytes:
    """The OpenAPI 3.1 document of every documented route, as `GET /openapi.json` serves it."""
    return build_document((s.method, s.path, s.doc) for s in ROUTES if s.doc is not None)


_RESPONSE_ID = (Param("response_id"),)
_ITEMS = (
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 100}),
    Param("order", {"type": "string", "enum": ["asc", "desc"]}),
    Param("after"),
)

INFERENCE: tuple[Spec, ...] = (
    Spec("POST", "/v1/chat/completions", handle_chat, Doc(
        "Chat completion; streams server-sent events with `stream: true`", ChatCompletion,
        body=ChatRequest, media=(("text/event-stream", ChatCompletionChunk),)), _calls),
    Spec("POST", "/v1/responses", handle_responses, Doc(
        "Responses API; streams typed server-sent events with `stream: true`", ResponseObject,
        body=ResponsesRequest, media=(("text/event-stream", TEXT),)), _stored),
    Spec("GET", "/v1/responses/{response_id}", handle_get_response,
         Doc("A stored response (the calling key's)", ResponseObject), _stored),
    Spec("DELETE", "/v1/responses/{response_id}", handle_delete_response,
         Doc("Delete a stored response"), _stored),
    Spec("GET", "/v1/responses/{response_id}/input_items", handle_input_items,
         Doc("The input items of a stored response", query=_ITEMS), _stored),
    Spec("POST", "/v1/embeddings", handle_embeddings,
         Doc("Embeddings", EmbeddingsResponse, body=EmbeddingsRequest), _calls),
    Spec("POST", "/v1/messages", handle_messages, Doc(
        "Anthropic Messages; streams Anthropic's events with `stream: true`", body=MessagesRequest,
        media=(("text/event-stream", OBJECT),), anthropic_errors=True), _calls, ANTHROPIC_ERRORS),
    Spec("POST", "/v1/messages/count_tokens", handle_count_tokens, Doc(
        "A Messages prompt's input tokens", body=MessagesRequest, anthropic_errors=True),
         _calls, ANTHROPIC_ERRORS),
    Spec("POST", "/mcp", handle_mcp, Doc(
        "MCP over Streamable HTTP: the tools of the tool servers the caller's policy admits",
        RESULT_SCHEMA, body=MESSAGE_SCHEMA, media=(("text/event-stream", TEXT),),
        error_schema=ERROR_SCHEMA), _calls, MCP_ERRORS),
    Spec("GET", "/v1/models", handle_models, Doc("Models the caller's policy can reach"), _models),
    Spec("GET", "/v1/models/{model}", handle_models, Doc("One model"), _models),
)  # fmt: skip

SERVICE: tuple[Spec, ...] = (
    Spec("GET", "/v1/platform/traces/{trace_id}/receipt", receipt_keys.get_receipt,
         Doc("The trace's signed receipt (compact JWS, EdDSA)"), lambda s: (s.evidence,)),
    Spec("GET", "/.well-known/llmeu/jwks.json", receipt_keys.get_jwks,
         Doc("The public keys that verify receipts and checkpoints (JWKS)",
             answer_type="application/jwk-set+json", public=True), lambda s: (s.evidence,)),
    Spec("GET", "/healthz", service.handle_healthz,
         Doc("Liveness and ledger state", public=True), lambda s: (s.health.alive,)),
    Spec("GET", "/readyz", service.handle_readyz, Doc(
        "Readiness: the ledger answers, the configuration is loaded; endpoints down now "
        "(the local model host, while restarted) under `unavailable_endpoints`",
        public=True), lambda s: (s.health.ready,)),
    Spec("GET", "/metrics", service.handle_metrics, Doc(
        "Prometheus metrics (no tenant data)", TEXT, answer_type="text/plain", public=True),
         lambda s: (s.telemetry,)),
    Spec("GET", "/", service.handle_pointer, Doc("Where to go: the API, console and docs",
                                                 public=True)),
    Spec("GET", "/v1", service.handle_pointer, Doc("Where to go: the API, console and docs",
                                                   public=True)),
    Spec("GET", "/openapi.json", handle_openapi, Doc("This document", public=True),
         _openapi),
    Spec("GET", "/console", console.handle_console, None),
    Spec("GET", "/console/", console.handle_console_slash, None),
    Spec("GET", "/console/{name}", console.handle_console_asset, None),
    Spec("GET", "/auth/login", sign_in.handle_login, None, _platform),
    Spec("GET", "/auth/callback", sign_in.handle_callback, None, _platform),
    Spec("GET", "/auth/session", sign_in.handle_session, None, _platform),
    Spec("POST", "/auth/logout", sign_in.handle_logout, None, _platform),
)  # fmt: skip

ROUTES: tuple[Spec, ...] = (
    *INFERENCE,
    *(Spec(m, p, h, d, lambda s: (s.platform,)) for m, p, h, d in platform.PLATFORM_ROUTES),
    *(Spec(m, p, h, d, lambda s: (s.platform,)) for m, p, h, d in team_routes.TEAM_ROUTES),
    *(Spec(m, p, h, d, lambda s: (s.platform,)) for m, p, h, d in user_routes.USER_ROUTES),
    *(
        Spec(m, p, h, d, lambda s: (s.platform,), scim_routes.SCIM_ERRORS)
        for m, p, h, d in scim_routes.SCIM_ROUTES
    ),
    *(Spec(m, p, h, d, lambda s: (s.compliance,)) for m, p, h, d in compliance.COMPLIANCE_ROUTES),
    *SERVICE,
)


def route_table(services: Services) -> list[Route]:
    """Every route, its handler bound to the gateway's services."""
    return [
        Route(s.method, s.path, partial(s.handler, *s.bind(services)), s.doc, s.shape)
        for s in ROUTES
    ]
