"""MCP's mirrored headers (2026-07-28): values, `x-mcp-header` annotations, mismatches."""

from __future__ import annotations

from typing import Any

import pytest

from llmeu.errors import ProtocolError
from llmeu.protocol.mcp_headers import (
    check_param_headers,
    check_routing_headers,
    decode_value,
    encode_value,
    invalid_annotation,
    param_headers,
)
from llmeu.protocol.mcp_wire import HEADER_MISMATCH

REGION = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "limits": {"type": "object", "properties": {"max": {"type": "integer", "x-mcp-header": "Max"}}},
    "query": {"type": "string"},
}}  # fmt: skip


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_values_are_written_as_the_specification_shows(value: str, written: str) -> None:
    assert encode_value(value) == written
    assert decode_value(written) == value


@pytest.mark.parametrize("bad", ["=?base64?!!!?=", "=?base64?SGk?=", "=?base64?/w==?="])
def test_a_malformed_wrapper_decodes_to_nothing(bad: str) -> None:
    assert decode_value(bad) is None


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        pytest.param(REGION, None, id="valid"),
        pytest.param({"type": "object"}, None, id="none"),
        pytest.param({"x-mcp-header": "Root"}, "outside", id="on-the-root"),
        pytest.param({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
                     "not a string, integer or boolean", id="number"),
        pytest.param({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}},
                     "not a header name", id="not-a-token"),
        pytest.param({"properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                     "b": {"type": "string", "x-mcp-header": "a"}}},
                     "on both", id="duplicate"),
        pytest.param({"properties": {"a": {"type": "array", "items": {
            "type": "string", "x-mcp-header": "A"}}}}, "outside", id="under-items"),
        pytest.param({"properties": {"a": {"type": "string", "default": {"x-mcp-header": 1}}}},
                     None, id="instance-data-is-not-a-schema"),
    ],
)  # fmt: skip
def test_annotations_are_checked(schema: dict[str, Any], problem: str | None) -> None:
    found = invalid_annotation(schema)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_annotated_arguments_become_headers() -> None:
    headers = param_headers(REGION, {"region": "eu-west", "limits": {"max": 3}, "query": "x"})
    assert sorted(headers) == [("Mcp-Param-Max", "3"), ("Mcp-Param-Region", "eu-west")]
    assert param_headers(REGION, {"query": "x", "region": None}) == []
    assert param_headers(REGION, {"region": True}) == [("Mcp-Param-Region", "true")]


def sent(**headers: str | list[str]) -> dict[str, list[str]]:
    return {k.replace("_", "-"): v if isinstance(v, list) else [v] for k, v in headers.items()}


@pytest.mark.parametrize(
    ("arguments", "headers", "ok"),
    [
        pytest.param({"region": "eu"}, sent(mcp_param_region="eu"), True, id="match"),
        pytest.param({"region": "eu"}, sent(), False, id="missing"),
        pytest.param({"query": "q"}, sent(mcp_param_region="eu"), False, id="no-argument"),
        pytest.param({"region": "eu"}, sent(mcp_param_region="us"), False, id="other-value"),
        pytest.param({"region": "eu"}, sent(mcp_param_region=["eu", "eu"]), False, id="twice"),
        pytest.param({"region": "é"}, sent(mcp_param_region="=?base64?w6k=?="), True,
                     id="wrapped"),
        pytest.param({"limits": {"max": 42}}, sent(mcp_param_max="42.0"), True,
                     id="integer-as-number"),
        pytest.param({"limits": {"max": 42}}, sent(mcp_param_max="4.2e1"), False,
                     id="no-exponent"),
    ],
)  # fmt: skip
def test_param_headers_must_match_the_arguments(
    arguments: dict[str, Any], headers: dict[str, list[str]], ok: bool
) -> None:
    if ok:
        check_param_headers(REGION, arguments, headers)
        return
    with pytest.raises(ProtocolError) as refused:
        check_param_headers(REGION, arguments, headers)
    assert refused.value.rpc_code == HEADER_MISMATCH


def test_routing_headers_must_mirror_the_body() -> None:
    good = sent(mcp_protocol_version="2026-07-28", mcp_method="tools/call", mcp_name="crm__x")
    check_routing_headers("tools/call", {"name": "crm__x"}, "2026-07-28", good)
    check_routing_headers("tools/list", {}, "2026-07-28",
                          sent(mcp_protocol_version="2026-07-28", mcp_method="tools/list"))  # fmt: skip
    for wrong in (
        {**good, "mcp-name": ["crm__y"]},
        {**good, "mcp-method": ["tools/list"]},
        {k: v for k, v in good.items() if k != "mcp-protocol-version"},
        {**good, "mcp-method": ["tools/call", "tools/call"]},
    ):
        with pytest.raises(ProtocolError) as refused:
            check_routing_headers("tools/call", {"name": "crm__x"}, "2026-07-28", wrong)
        assert refused.value.rpc_code == HEADER_MISMATCH
