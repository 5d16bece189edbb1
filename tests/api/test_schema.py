"""Generated input, valid and not, against every route of the published OpenAPI schema.

A real gateway process in front of the fake upstream; schemathesis derives
requests from `GET /openapi.json` (bodies, path and query parameters, with
the negative cases it generates) and every answer must be below 500 and,
when it is an error, in its surface's shape (OpenAI's, Anthropic's, JSON-RPC's).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from llmeu.api.routes.route_table import openapi_document
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_gateway,
)


@pytest.fixture(scope="module")
def schema_gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("schema")
    gateway = start_gateway(
        tmp, config=config_yaml(fake_endpoint("fakeprov-fr-a", upstream_process))
    )
    yield gateway
    gateway.kill()


# The very document the gateway serves (`test_the_served_schema_is_this_one` checks it).
schema = schemathesis.openapi.from_dict(json.loads(openapi_document()))
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])


def assert_openai_error(status: int, body: bytes) -> None:
    payload = json.loads(body)
    assert isinstance(payload, dict) and set(payload) <= {"error", "llmeu"}, payload
    error = payload["error"]
    assert set(error) >= {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str)


def assert_json_rpc_error(body: bytes) -> None:
    """MCP's errors (`/mcp`): JSON-RPC error objects."""
    payload = json.loads(body)
    assert isinstance(payload, dict) and payload.get("jsonrpc") == "2.0", payload
    assert set(payload) <= {"jsonrpc", "id", "error"}, payload
    assert isinstance(payload["error"]["code"], int)
    assert isinstance(payload["error"]["message"], str) and payload["error"]["message"]


def assert_anthropic_error(body: bytes) -> None:
    payload = json.loads(body)
    assert isinstance(payload, dict) and set(payload) <= {"type", "error", "llmeu"}, payload
    assert payload["type"] == "error"
    assert isinstance(payload["error"]["type"], str)
    assert isinstance(payload["error"]["message"], str) and payload["error"]["message"]


def assert_scim_error(body: bytes) -> None:
    """SCIM's errors (`/scim/v2/…`): `urn:ietf:params:scim:api:messages:2.0:Error`."""
    payload = json.loads(body)
    assert payload["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"], payload
    assert isinstance(payload["status"], str) and isinstance(payload["detail"], str)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_route_answers_generated_input_without_a_5xx(
    case: Any, schema_gateway: Gateway
) -> None:
    response = case.call(
        base_url=schema_gateway.url,
        headers={"authorization": f"Bearer {schema_gateway.admin_key}"},
    )
    assert response.status_code < 500, (response.status_code, response.content[:500])
    if response.status_code >= 400 and case.path.startswith("/v1/messages"):
        assert_anthropic_error(response.content)
    elif response.status_code >= 400 and case.path == "/mcp":
        assert_json_rpc_error(response.content)
    elif response.status_code >= 400 and case.path.startswith("/scim/"):
        assert_scim_error(response.content)
    elif response.status_code >= 400:
        assert_openai_error(response.status_code, response.content)


def test_the_served_schema_is_this_one(schema_gateway: Gateway) -> None:
    served = httpx.get(schema_gateway.url + "/openapi.json", timeout=10)
    assert served.status_code == 200
    document = served.json()
    assert document == json.loads(openapi_document())
    assert document["openapi"].startswith("3.1")
    assert {"/v1/chat/completions", "/v1/embeddings", "/v1/platform/traces/{trace_id}"} <= set(
        document["paths"]
    )
    request = document["components"]["schemas"]["ChatCompletionRequest"]
    assert {"model", "messages"} <= set(request["required"])
