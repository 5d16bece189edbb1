"""Every documented route answers what the OpenAPI document says: its status, and a body
valid against the schema the document gives (generated from the same wire models).

One case per documented route, in the order a tenant's life runs (a key, a stored
response, a trace, its receipt, a hold…); a route added to the table without a case here
fails `test_every_documented_route_has_a_case`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import jsonschema
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from llmeu.api.app import App, documented_routes
from llmeu.api.routes.route_table import openapi_document
from tests.api.conftest import SCIM_TOKEN

DOCUMENT: dict[str, Any] = json.loads(openapi_document())
REGISTRY = Registry().with_resource(
    "urn:llmeu", DRAFT202012.create_resource({"components": DOCUMENT["components"]})
)
TENANT = "tenant"
"""Cases on the stored responses run as a tenant key whose policy stores content."""

CHAT = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {
    "model": "fake-model",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "hi"}],
}
STORING_POLICY = {"policy_id": "keeps", "allow_classes": ["on_premise", "eu_sovereign"],
                  "max_retention": "P0D", "store_content": "P1D"}  # fmt: skip

# (method, path template, path values or a function of what earlier cases left, body)
Case = tuple[str, str, Callable[[dict[str, Any]], str], dict[str, Any] | None]


def _fixed(path: str) -> Callable[[dict[str, Any]], str]:
    return lambda _: path


CASES: list[Case] = [
    ("PUT", "/v1/platform/policies/{policy_id}", _fixed("/v1/platform/policies/keeps"), STORING_POLICY),
    ("POST", "/v1/platform/keys", _fixed("/v1/platform/keys"), {"name": "tenant", "policy_id": "keeps"}),
    ("POST", "/v1/chat/completions", _fixed("/v1/chat/completions"), CHAT),
    ("POST", "/v1/responses", _fixed("/v1/responses"), {"model": "fake-model", "input": "hi"}),
    ("GET", "/v1/responses/{response_id}", lambda s: f"/v1/responses/{s['response']}", None),
    ("GET", "/v1/responses/{response_id}/input_items",
     lambda s: f"/v1/responses/{s['response']}/input_items", None),
    ("DELETE", "/v1/responses/{response_id}", lambda s: f"/v1/responses/{s['response']}", None),
    ("POST", "/v1/embeddings", _fixed("/v1/embeddings"), {"model": "fake-model", "input": "hi"}),
    ("POST", "/v1/messages", _fixed("/v1/messages"), MESSAGES),
    ("POST", "/v1/messages/count_tokens", _fixed("/v1/messages/count_tokens"), MESSAGES),
    ("POST", "/mcp", _fixed("/mcp"), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ("GET", "/v1/models", _fixed("/v1/models"), None),
    ("GET", "/v1/models/{model}", _fixed("/v1/models/fake-model"), None),
    ("GET", "/v1/platform/keys", _fixed("/v1/platform/keys"), None),
    ("GET", "/v1/platform/me", _fixed("/v1/platform/me"), None),
    ("GET", "/v1/platform/policies", _fixed("/v1/platform/policies"), None),
    ("GET", "/v1/platform/policies/{policy_id}", _fixed("/v1/platform/policies/keeps"), None),
    ("GET", "/v1/platform/endpoints", _fixed("/v1/platform/endpoints"), None),
    ("POST", "/v1/platform/reload", _fixed("/v1/platform/reload"), None),
    ("GET", "/v1/platform/usage", _fixed("/v1/platform/usage"), None),
    ("GET", "/v1/platform/traces", _fixed("/v1/platform/traces"), None),
    ("GET", "/v1/platform/traces/{trace_id}", lambda s: f"/v1/platform/traces/{s['trace']}", None),
    ("GET", "/v1/platform/traces/{trace_id}/receipt",
     lambda s: f"/v1/platform/traces/{s['trace']}/receipt", None),
    ("GET", "/.well-known/llmeu/jwks.json", _fixed("/.well-known/llmeu/jwks.json"), None),
    ("POST", "/v1/platform/holds", _fixed("/v1/platform/holds"), {"reason": "audit"}),
    ("GET", "/v1/platform/holds", _fixed("/v1/platform/holds"), None),
    ("DELETE", "/v1/platform/holds/{hold_id}", lambda s: f"/v1/platform/holds/{s['hold']}", None),
    ("DELETE", "/v1/platform/subjects/{user_id}", _fixed("/v1/platform/subjects/user-1"), None),
    ("GET", "/v1/platform/erasures", _fixed("/v1/platform/erasures"), None),
    ("GET", "/v1/platform/exports/{name}", _fixed("/v1/platform/exports/calls.jsonl"), None),
    ("GET", "/v1/platform/cache", _fixed("/v1/platform/cache"), None),
    ("DELETE", "/v1/platform/cache", _fixed("/v1/platform/cache"), None),
    ("GET", "/v1/platform/admin-events", _fixed("/v1/platform/admin-events"), None),
    ("POST", "/v1/platform/teams", _fixed("/v1/platform/teams"), {"name": "search", "members": ["ana"]}),
    ("GET", "/v1/platform/teams", _fixed("/v1/platform/teams"), None),
    ("GET", "/v1/platform/teams/{team_id}", lambda s: f"/v1/platform/teams/{s['team']}", None),
    ("PATCH", "/v1/platform/teams/{team_id}", lambda s: f"/v1/platform/teams/{s['team']}",
     {"budget_eur_month": 100}),
    ("DELETE", "/v1/platform/teams/{team_id}", lambda s: f"/v1/platform/teams/{s['team']}", None),
    ("DELETE", "/v1/platform/keys/{key_id}", lambda s: f"/v1/platform/keys/{s['key']}", None),
    ("POST", "/scim/v2/Users", _fixed("/scim/v2/Users"), {"userName": "ana@example.org"}),
    ("GET", "/scim/v2/Users", _fixed("/scim/v2/Users"), None),
    ("GET", "/scim/v2/Users/{user_id}", lambda s: f"/scim/v2/Users/{s['user']}", None),
    ("PUT", "/scim/v2/Users/{user_id}", lambda s: f"/scim/v2/Users/{s['user']}",
     {"userName": "ana@example.org", "displayName": "Ana"}),
    ("PATCH", "/scim/v2/Users/{user_id}", lambda s: f"/scim/v2/Users/{s['user']}",
     {"Operations": [{"op": "replace", "path": "displayName", "value": "Ana B"}]}),
    ("GET", "/v1/platform/users", _fixed("/v1/platform/users"), None),
    ("PUT", "/v1/platform/users/{user_id}/role", lambda s: f"/v1/platform/users/{s['user']}/role",
     {"role": "auditor"}),
    ("POST", "/scim/v2/Groups", _fixed("/scim/v2/Groups"), {"displayName": "auditors"}),
    ("GET", "/scim/v2/Groups", _fixed("/scim/v2/Groups"), None),
    ("GET", "/scim/v2/Groups/{group_id}", lambda s: f"/scim/v2/Groups/{s['group']}", None),
    ("PUT", "/scim/v2/Groups/{group_id}", lambda s: f"/scim/v2/Groups/{s['group']}",
     {"displayName": "auditors", "members": []}),
    ("PATCH", "/scim/v2/Groups/{group_id}", lambda s: f"/scim/v2/Groups/{s['group']}",
     {"Operations": [{"op": "replace", "path": "displayName", "value": "auditors-eu"}]}),
    ("DELETE", "/scim/v2/Groups/{group_id}", lambda s: f"/scim/v2/Groups/{s['group']}", None),
    ("DELETE", "/scim/v2/Users/{user_id}", lambda s: f"/scim/v2/Users/{s['user']}", None),
    ("GET", "/scim/v2/ServiceProviderConfig", _fixed("/scim/v2/ServiceProviderConfig"), None),
    ("GET", "/scim/v2/ResourceTypes", _fixed("/scim/v2/ResourceTypes"), None),
    ("GET", "/scim/v2/Schemas", _fixed("/scim/v2/Schemas"), None),
    ("GET", "/healthz", _fixed("/healthz"), None),
    ("GET", "/readyz", _fixed("/readyz"), None),
    ("GET", "/metrics", _fixed("/metrics"), None),
    ("GET", "/openapi.json", _fixed("/openapi.json"), None),
    ("GET", "/", _fixed("/"), None),
    ("GET", "/v1", _fixed("/v1"), None),
]  # fmt: skip


def _validate(schema: dict[str, Any], instance: object) -> None:
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(instance)


def _schema(method: str, path: str, status: int, content_type: str) -> dict[str, Any]:
    answers = DOCUMENT["paths"][path][method.lower()]["responses"]
    assert str(status) in answers, f"{method} {path} answered {status}, not documented"
    content = answers[str(status)]["content"]
    media = content_type.split(";")[0].strip()
    assert media in content, f"{method} {path}: {media} is not documented ({list(content)})"
    schema: dict[str, Any] = content[media]["schema"]
    return json.loads(json.dumps(schema).replace('"#/components', '"urn:llmeu#/components'))


def test_every_documented_route_has_a_case(app: App) -> None:
    assert {(m, p) for m, p, _, _ in CASES} == documented_routes(app)


async def test_every_route_answers_its_documented_status_and_body(
    client: httpx.AsyncClient,
) -> None:
    seen: dict[str, Any] = {}
    for method, template, path, body in CASES:
        headers = {"authorization": f"Bearer {seen[TENANT]}"} if "/responses" in template else {}
        if template.startswith("/scim/"):
            headers = {"authorization": f"Bearer {SCIM_TOKEN}"}
        response = await client.request(method, path(seen), json=body, headers=headers)
        documented = DOCUMENT["paths"][template][method.lower()]["responses"]
        success = next(status for status in documented if status.startswith("2"))
        assert str(response.status_code) == success, (method, template, response.text[:300])
        _remember(seen, template, response)
        if response.status_code == 204:
            assert response.content == b"" and "content-type" not in response.headers
            continue
        schema = _schema(method, template, response.status_code, response.headers["content-type"])
        if response.headers["content-type"].startswith("application/json"):
            _validate(schema, response.json())


def _remember(seen: dict[str, Any], template: str, response: httpx.Response) -> None:
    """What later cases need of earlier answers: ids, and a tenant key that stores."""
    posted = response.request.method == "POST"
    if template == "/v1/platform/keys" and posted:
        seen["key"], seen[TENANT] = response.json()["id"], response.json()["key"]
    elif template == "/v1/chat/completions":
        seen["trace"] = response.headers["x-llmeu-trace-id"]
    elif template == "/v1/responses":
        seen["response"] = response.json()["id"]
    elif template == "/v1/platform/holds" and posted:
        seen["hold"] = response.json()["id"]
    elif template == "/v1/platform/teams" and posted:
        seen["team"] = response.json()["id"]
    elif template == "/scim/v2/Users" and posted:
        seen["user"] = response.json()["id"]
    elif template == "/scim/v2/Groups" and posted:
        seen["group"] = response.json()["id"]


async def test_every_route_answers_a_missing_key_with_its_documented_error(
    client: httpx.AsyncClient,
) -> None:
    for method, template, _, _ in CASES:
        operation = DOCUMENT["paths"][template][method.lower()]
        if operation.get("security") == []:
            continue
        url = template.replace("{", "x").replace("}", "")
        response = await client.request(method, url, headers={"authorization": "Bearer nope"})
        assert response.status_code == 401, (method, template, response.text[:200])
        _validate(_schema(method, template, 401, response.headers["content-type"]), response.json())
