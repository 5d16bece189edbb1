"""The JSON shape of errors: OpenAI's `{"error": {message, type, param, code}}`.

Also turns msgspec's validation messages into a message and a `param` path
(`messages[0].content`) so every validation error names what was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import UNSET, Struct, UnsetType

from llmeu.errors import ApiError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.routing_block import RoutingBlock


class ErrorDetail(Struct):
    message: str
    type: str
    param: str | None
    code: str | None
    details: list[dict[str, Any]] | UnsetType = UNSET


class ErrorBody(Struct, omit_defaults=True):
    error: ErrorDetail
    llmeu: RoutingBlock | dict[str, Any] | UnsetType = UNSET


_AT_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_FIELD = re.compile(r"(?:unknown|missing required) field `(?P<field>[^`]+)`")


def encode_error(
    message: str,
    type_: str,
    *,
    param: str | None = None,
    code: str | None = None,
    details: Sequence[Mapping[str, Any]] | None = None,
    routing: RoutingBlock | Mapping[str, Any] | None = None,
) -> bytes:
    """An OpenAI-shaped error body; `routing` adds the `llmeu` block when a trace exists."""
    detail = ErrorDetail(
        message=message,
        type=type_,
        param=param,
        code=code,
        details=[dict(d) for d in details] if details is not None else UNSET,
    )
    body = ErrorBody(
        error=detail,
        llmeu=(routing if isinstance(routing, RoutingBlock) else dict(routing))
        if routing is not None
        else UNSET,
    )
    return encoder.encode(body)


def error_body(error: ApiError, routing: RoutingBlock | Mapping[str, Any] | None = None) -> bytes:
    """The OpenAI-shaped body of an error from the tree."""
    return encode_error(
        error.message,
        error.type,
        param=error.param,
        code=error.code,
        details=error.details,
        routing=routing,
    )


def describe_validation_error(text: str) -> tuple[str, str | None]:
    """Split a msgspec validation message into (message, param path)."""
    path: str | None = None
    message = text
    match = _AT_PATH.search(text)
    if match is not None:
        path = match.group("path") or None
        message = text[: match.start()]
    field = _FIELD.search(message)
    if field is not None:
        name = field.group("field")
        path = f"{path}.{name}" if path else name
    return message, path
