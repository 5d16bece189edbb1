"""A route: its method, its path template, its handler, and how it is documented.

The route table (`llmeu.api.routes.route_table`) is the one list of routes: the app
dispatches on it and `GET /openapi.json` is generated from it (each route's
`Doc`, with request and answer bodies from the msgspec types that decode and
encode them), so the document cannot name a route the app does not serve, or
miss one it does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from llmeu.api.http.error_responses import OPENAI_ERRORS, ErrorShape

Handler = Callable[..., Awaitable[None]]
"""`handler(*bound, request, *segments)`: one argument for each `{name}` segment of the path."""

Schema = type | dict[str, Any]
"""A body's schema: the msgspec type that decodes or encodes it, or a JSON schema."""

OBJECT: dict[str, Any] = {"type": "object"}
TEXT: dict[str, Any] = {"type": "string"}


@dataclass(frozen=True, slots=True)
class Param:
    """A query parameter; `schema` is its JSON schema (a string unless said)."""

    name: str
    schema: dict[str, Any] = field(default_factory=lambda: dict(TEXT))


@dataclass(frozen=True, slots=True)
class Doc:
    """What the OpenAPI document says of a route. `answer` is the success body's schema;
    `media` adds other content types the route may answer with (a stream's
    `text/event-stream`, an export's CSV); `public` routes need no key; `anthropic_errors`
    routes answer errors in Anthropic's shape, and a route with an `error_schema` in that
    one (MCP's JSON-RPC errors, SCIM's), of media type `error_type`."""

    summary: str
    answer: Schema = field(default_factory=lambda: dict(OBJECT))
    body: Schema | None = None
    query: tuple[Param, ...] = ()
    media: tuple[tuple[str, Schema], ...] = ()
    answer_type: str = "application/json"
    status: int = 200
    public: bool = False
    anthropic_errors: bool = False
    error_schema: Schema | None = None
    error_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Route:
    """One route. `path` is a template: a segment written `{name}` matches any one non-empty
    segment, passed to the handler in order. Routes with a `doc` are the API, described by
    `GET /openapi.json`; `shape` is how the surface writes its errors."""

    method: str
    path: str
    handler: Handler
    doc: Doc | None = None
    shape: ErrorShape = OPENAI_ERRORS

    @property
    def documented(self) -> bool:
        return self.doc is not None

    @property
    def templated(self) -> bool:
        return "{" in self.path

    @property
    def params(self) -> list[str]:
        """The names of the `{name}` segments, in order."""
        return [s[1:-1] for s in self.path.split("/") if s.startswith("{")]

    def match(self, segments: list[str]) -> list[str] | None:
        """The values of the `{name}` segments if `segments` (the path split on `/`) fit."""
        pattern = self.path.split("/")
        if len(pattern) != len(segments):
            return None
        values = []
        for want, got in zip(pattern, segments, strict=True):
            if want.startswith("{"):
                if not got:
                    return None
                values.append(got)
            elif want != got:
                return None
        return values
