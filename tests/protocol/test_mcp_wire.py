"""MCP's JSON-RPC messages: what a client may send, and how the gateway writes answers."""

from __future__ import annotations

import json

import pytest

from llmeu.errors import ProtocolError
from llmeu.protocol.mcp_wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
    error_message,
    handshake_version,
    method_not_found,
    parse_message,
    read_upstream,
    result_message,
    sse_event,
    unsupported_version,
)


def test_a_request_a_notification_and_a_response() -> None:
    request = parse_message(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
    assert (request.method, request.id, request.params, request.is_request) == (
        "tools/list",
        7,
        {},
        True,
    )
    note = parse_message(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert note.id is None and not note.is_request
    response = parse_message(b'{"jsonrpc": "2.0", "id": "s-1", "result": {}}')
    assert response.method is None and response.id == "s-1"


def test_meta_is_read_from_params() -> None:
    message = parse_message(
        b'{"jsonrpc": "2.0", "id": "a", "method": "tools/call", '
        b'"params": {"name": "x", "_meta": {"progressToken": 3}}}'
    )
    assert message.meta == {"progressToken": 3}
    assert parse_message(b'{"jsonrpc": "2.0", "id": 1, "method": "m"}').meta == {}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param(b"{", PARSE_ERROR, id="not-json"),
        pytest.param(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST,
                     id="batch"),
        pytest.param(b'{"id": 1, "method": "ping"}', INVALID_REQUEST, id="no-jsonrpc"),
        pytest.param(b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', INVALID_REQUEST,
                     id="wrong-jsonrpc"),
        pytest.param(b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST,
                     id="null-id"),
        pytest.param(b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST,
                     id="boolean-id"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1}', INVALID_REQUEST, id="no-method"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": ""}', INVALID_REQUEST,
                     id="empty-method"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]}',
                     INVALID_PARAMS, id="params-not-object"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"a": '
                     + b"[" * 80 + b"]" * 80 + b"}}", INVALID_REQUEST, id="too-deep"),
    ],
)  # fmt: skip
def test_what_is_not_a_message_is_refused_with_its_code(body: bytes, code: int) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_message(body)
    assert refused.value.rpc_code == code
    assert refused.value.status == 400


def test_answers_are_json_rpc() -> None:
    assert json.loads(result_message(3, {"tools": []})) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"tools": []},
    }
    assert json.loads(error_message("a", -32602, "Unknown tool: x")) == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32602, "message": "Unknown tool: x"},
    }
    assert "id" not in json.loads(error_message(None, PARSE_ERROR, "bad", {"why": 1}))
    assert sse_event(b'{"a":1}') == b'event: message\ndata: {"a":1}\n\n'


def test_versions_and_unknown_methods() -> None:
    assert handshake_version("2025-06-18") == "2025-06-18"
    assert handshake_version("2024-11-05") == "2025-11-25"
    assert handshake_version(None) == "2025-11-25"
    error = unsupported_version("1900-01-01")
    assert error.rpc_code == UNSUPPORTED_VERSION
    assert error.data == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18"],
        "requested": "1900-01-01",
    }
    assert method_not_found("resources/list").status == 404


def test_what_a_tool_server_sends() -> None:
    response = read_upstream(b'{"jsonrpc": "2.0", "id": 4, "result": {"content": []}}')
    assert response.is_response and response.result == {"content": []}
    note = read_upstream('{"jsonrpc": "2.0", "method": "notifications/progress", '
                         '"params": {"progressToken": "t", "progress": 1}}')  # fmt: skip
    assert not note.is_response and note.params == {"progressToken": "t", "progress": 1}
    failed = read_upstream(b'{"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, '
                           b'"message": "no", "data": {"x": 1}}}')  # fmt: skip
    assert failed.error is not None and (failed.error.code, failed.error.data) == (-32602, {"x": 1})
    for bad in (b"nope", b'{"id": 1, "result": {}}', b'{"jsonrpc": "2.0", "result": 3}'):
        with pytest.raises(ValueError, match="JSON-RPC"):
            read_upstream(bad)
