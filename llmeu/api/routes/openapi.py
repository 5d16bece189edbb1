"""GET /openapi.json: the gateway's OpenAPI 3.1 description, generated from the route table.

Each documented route of `llmeu.api.routes.route_table` gives its method, path and
`Doc`; request and answer bodies come from the msgspec types that decode and
encode them (`msgspec.json.schema_components`), path parameters from the
path's `{name}` segments, and every route gets the error answers of its
surface. Nothing here names a route: the document cannot drift from what the
gateway serves and accepts. Property-based tests (schemathesis) send generated
input from it to every route.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from llmeu.api.http.asgi import Request
from llmeu.api.http.route import Doc, Schema
from llmeu.protocol.error_shape import ErrorDetail


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
_PUBLISHED_AS = {"ChatRequest": "ChatCompletionRequest"}
"""The canonical request is the chat route's body: published under the route's own name."""

Entry = tuple[str, str, Doc]


def build_document(entries: Iterable[Entry]) -> bytes:
    routes = list(entries)
    schemas = _Schemas(routes)
    paths: dict[str, dict[str, Any]] = {}
    for method, path, doc in routes:
        paths.setdefault(path, {})[method.lower()] = _operation(path, doc, schemas)
    document = {
        "openapi": "3.1.0",
        "info": {"title": "llmeu", "version": "1", "description": "OpenAI-compatible EU gateway"},
        "paths": paths,
        "components": {
            "schemas": schemas.components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
    return msgspec.json.encode(document)


class _Schemas:
    """Every msgspec type the routes name, as components; a type's schema is a reference."""

    def __init__(self, routes: list[Entry]):
        types: list[type] = [ErrorBody]
        for _, _, doc in routes:
            for schema in (doc.body, doc.answer, *(s for _, s in doc.media)):
                if isinstance(schema, type) and schema not in types:
                    types.append(schema)
        refs, components = msgspec.json.schema_components(types, ref_template=_REF)
        for old, new in _PUBLISHED_AS.items():
            if old in components:
                components[new] = components.pop(old)
        self.components = components
        self._refs = {t: self._published(ref) for t, ref in zip(types, refs, strict=True)}

    @staticmethod
    def _published(ref: dict[str, Any]) -> dict[str, Any]:
        name = ref["$ref"].rsplit("/", 1)[1]
        return {"$ref": _REF.format(name=_PUBLISHED_AS.get(name, name))}

    def of(self, schema: Schema) -> dict[str, Any]:
        return self._refs[schema] if isinstance(schema, type) else schema


def _operation(path: str, doc: Doc, schemas: _Schemas) -> dict[str, Any]:
    content = {doc.answer_type: {"schema": schemas.of(doc.answer)}}
    content.update({media: {"schema": schemas.of(schema)} for media, schema in doc.media})
    error = _ANTHROPIC_ERROR if doc.anthropic_errors else schemas.of(ErrorBody)
    if doc.error_schema is not None:
        error = schemas.of(doc.error_schema)
    responses: dict[str, Any] = {str(doc.status): {"description": "success", "content": content}}
    for status, description in _ERRORS.items():
        responses[status] = {
            "description": description,
            "content": {doc.error_type: {"schema": error}},
        }
    operation: dict[str, Any] = {"summary": doc.summary, "responses": responses}
    if doc.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schemas.of(doc.body)}},
        }
    parameters = [
        {"name": segment[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
        for segment in path.split("/")
        if segment.startswith("{")
    ]
    parameters += [
        {"name": p.name, "in": "query", "required": False, "schema": p.schema} for p in doc.query
    ]
    if parameters:
        operation["parameters"] = parameters
    if doc.public:
        operation["security"] = []
    return operation


async def handle_openapi(document: bytes, request: Request) -> None:
    await request.respond(200, document)
