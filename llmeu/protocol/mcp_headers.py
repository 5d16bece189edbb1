"""MCP's HTTP headers of 2026-07-28: what mirrors the body, and how a value is written.

Every request names its method in `Mcp-Method`, and a `tools/call`,
`prompts/get` or `resources/read` its tool, prompt or resource in `Mcp-Name`;
a tool's input schema may mark arguments with `x-mcp-header: Region`, whose
values then travel in `Mcp-Param-Region` too. A value that is not plain
printable ASCII (or has edge spaces, or looks like the wrapper) is written
`=?base64?…?=`. A server that reads the body must refuse a request whose
headers say something else (`HeaderMismatch`), so that an intermediary
routing on the headers cannot be shown one thing while the server does
another; a client must send them, and must leave out a tool whose
annotations are invalid.

llmeu is both: it checks the headers of what clients send to `/mcp`, and
writes them on what it sends a tool server. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any

from llmeu.errors import ProtocolError
from llmeu.protocol.mcp_wire import HEADER_MISMATCH

NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose `Mcp-Name` header mirrors a parameter, and which parameter."""
PARAM_PREFIX = "mcp-param-"
_WRAPPED = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")
_PLAIN = re.compile(r"^[\x20-\x7e]*$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
_MIRRORED_TYPES = frozenset({"string", "integer", "boolean"})
_ONE_SCHEMA = frozenset({
    "items", "contains", "unevaluatedItems", "additionalProperties", "propertyNames",
    "unevaluatedProperties", "not", "if", "then", "else", "contentSchema",
})  # fmt: skip
_LIST_OF_SCHEMAS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP_OF_SCHEMAS = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def encode_value(value: str) -> str:
    """A header value: as it is when it survives a header, else wrapped in base64."""
    if _PLAIN.match(value) and value == value.strip() and not _WRAPPED.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def decode_value(value: str) -> str | None:
    """The value a header carries; None when its base64 wrapper is malformed."""
    wrapped = _WRAPPED.match(value)
    if wrapped is None:
        return value
    payload = wrapped.group("payload")
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            return None
        return raw.decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _positions(schema: object) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every schema position with its chain of `properties` keys from the root (None once
    another applicator was crossed); instance data (`default`, `enum`) is never entered."""
    pending: list[tuple[tuple[str, ...] | None, object]] = [((), schema)]
    while pending:
        path, node = pending.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                pending.extend(
                    ((*path, k) if path is not None else None, v) for k, v in value.items()
                )
            elif keyword in _ONE_SCHEMA:
                pending.append((None, value))
            elif keyword in _LIST_OF_SCHEMAS and isinstance(value, list):
                pending.extend((None, v) for v in value)
            elif keyword in _MAP_OF_SCHEMAS and isinstance(value, dict):
                pending.extend((None, v) for v in value.values())


def invalid_annotation(schema: object) -> str | None:
    """Why a tool's `x-mcp-header` annotations are invalid, or None when they are not."""
    seen: dict[str, str] = {}
    for path, node in _positions(schema):
        if "x-mcp-header" not in node:
            continue
        if not path:
            return "x-mcp-header outside a chain of `properties`"
        where = ".".join(path)
        token = node["x-mcp-header"]
        if not isinstance(token, str) or not _TOKEN.match(token):
            return f"x-mcp-header of {where!r} is not a header name"
        if node.get("type") not in _MIRRORED_TYPES:
            return f"x-mcp-header on {where!r}, which is not a string, integer or boolean"
        if token.lower() in seen:
            return f"x-mcp-header {token!r} on both {seen[token.lower()]!r} and {where!r}"
        seen[token.lower()] = where
    return None


def has_annotations(schema: object) -> bool:
    """Whether any argument of the schema is mirrored in a header."""
    return next(_annotated(schema), None) is not None


def _annotated(schema: object) -> Iterator[tuple[tuple[str, ...], str, object]]:
    for path, node in _positions(schema):
        token = node.get("x-mcp-header")
        if path and isinstance(token, str):
            yield path, token, node.get("type")


def _argument(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _rendered(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def param_headers(schema: object, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The `Mcp-Param-*` headers a `tools/call` with `arguments` must carry (the schema's
    annotations must be valid: `invalid_annotation` is None)."""
    headers = []
    for path, token, _ in _annotated(schema):
        rendered = _rendered(_argument(arguments, path))
        if rendered is not None:
            headers.append((f"Mcp-Param-{token}", encode_value(rendered)))
    return headers


def check_param_headers(
    schema: object, arguments: Mapping[str, Any], headers: Mapping[str, list[str]]
) -> None:
    """Refuse (`HeaderMismatch`) a `tools/call` whose `Mcp-Param-*` headers disagree with its
    arguments. `headers` maps lower-cased names to every value sent."""
    if invalid_annotation(schema) is not None:
        return  # a client leaves such a tool out and sends no header for it
    for path, token, kind in _annotated(schema):
        name = f"Mcp-Param-{token}"
        sent = headers.get(PARAM_PREFIX + token.lower(), [])
        rendered = _rendered(_argument(arguments, path))
        if len(sent) > 1:
            raise _mismatch(f"{name} is sent more than once")
        if rendered is None:
            if sent:
                raise _mismatch(f"{name} is sent but the argument {'.'.join(path)!r} is not")
            continue
        if not sent:
            raise _mismatch(f"{name} is missing for the argument {'.'.join(path)!r}")
        decoded = decode_value(sent[0])
        if decoded is None or not _same(kind, rendered, decoded):
            raise _mismatch(f"{name} does not match the argument {'.'.join(path)!r}")


def _same(kind: object, rendered: str, decoded: str) -> bool:
    """As written; an integer argument also as a number (`42` and `42.0`)."""
    if rendered == decoded:
        return True
    if kind != "integer" or not _DECIMAL.match(decoded):
        return False
    try:
        number = float(rendered)
    except ValueError:
        return False
    return number.is_integer() and number == float(decoded)


def check_routing_headers(
    method: str, params: Mapping[str, Any], version: str, headers: Mapping[str, list[str]]
) -> None:
    """Refuse a modern request whose `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name`
    header is missing, repeated or says something else than its body."""
    expected = {"mcp-protocol-version": version, "mcp-method": method}
    named_by = NAMED_BY.get(method)
    if named_by is not None and params.get(named_by) is not None:
        expected["mcp-name"] = str(params[named_by])
    for name, value in expected.items():
        sent = headers.get(name, [])
        if len(sent) != 1:
            raise _mismatch(f"{name} must be sent once" if sent else f"{name} is missing")
        got = decode_value(sent[0]) if name == "mcp-name" else sent[0]
        if got != value:
            raise _mismatch(f"{name} does not match the request body")


def _mismatch(message: str) -> ProtocolError:
    return ProtocolError(f"header mismatch: {message}", rpc_code=HEADER_MISMATCH)
