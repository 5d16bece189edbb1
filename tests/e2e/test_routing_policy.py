"""Policies on a real gateway: keys' policies, narrowing by body and header, and /v1/models.

Endpoints for the alias `shared`: a French and a German `eu_sovereign` one,
a German `eu_resident` one and a US `global` one, each on its own fake
upstream so that which one was contacted is observed, not assumed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

FR_ONLY = """
  - policy_id: fr-only
    allow_classes: [on_premise, eu_sovereign]
    allow_countries: [FR]
    max_retention: P0D
"""
ENDPOINT_IDS = {"fr": "alpha-fr", "de": "beta-de", "resident": "delta-de", "global": "gamma-us"}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FakeUpstream]]:
    started = {name: start_fake_upstream(tmp_path_factory.mktemp(name)) for name in ENDPOINT_IDS}
    yield started
    for upstream in started.values():
        upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstreams: dict[str, FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("alpha-fr", upstreams["fr"], aliases=("shared",), priority=10),
        fake_endpoint("beta-de", upstreams["de"], aliases=("shared", "german"), country="DE",
                      priority=20),
        fake_endpoint("delta-de", upstreams["resident"], aliases=("shared", "resident-only"),
                      country="DE", sovereignty_class="eu_resident", priority=30),
        fake_endpoint("gamma-us", upstreams["global"], aliases=("shared", "global-only"),
                      country="US", sovereignty_class="global", retention="P30D", priority=0),
        fake_endpoint("epsilon-fr", upstreams["fr"], aliases=("keyless",),
                      api_key_env="LLMEU_TEST_UNSET_KEY"),
        policies=FR_ONLY,
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("gateway"), config=config)
    yield started
    started.kill()


@pytest.fixture(autouse=True)
def fresh_counts(upstreams: dict[str, FakeUpstream]) -> None:
    for upstream in upstreams.values():
        upstream.reset()


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    """A key per policy (the admin key has the default, eu-strict)."""
    made = {"eu-strict": gateway.admin_key}
    for policy_id in ("eu", "open", "fr-only"):
        response = httpx.post(
            f"{gateway.base_url}/platform/keys",
            json={"name": policy_id, "policy_id": policy_id},
            headers={"authorization": f"Bearer {gateway.admin_key}"},
            timeout=10,
        )
        assert response.status_code == 201, response.text
        made[policy_id] = response.json()["key"]
    return made


def chat(
    gateway: Gateway, key: str, *, narrowing: Any = None, header: str | None = None,
    model: str = "shared",
) -> httpx.Response:  # fmt: skip
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    if narrowing is not None:
        body["llmeu"] = narrowing
    headers = {"authorization": f"Bearer {key}"}
    if header is not None:
        headers["x-llmeu-policy"] = header
    return httpx.post(
        f"{gateway.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )


def contacted(upstreams: dict[str, FakeUpstream]) -> list[str]:
    return sorted(ENDPOINT_IDS[name] for name, u in upstreams.items() if u.stats())


# (key's policy, body field, header, endpoint that serves, policy_id in the routing block)
SERVED = [
    pytest.param("eu-strict", None, None, "alpha-fr", "eu-strict", id="default-priority"),
    pytest.param("open", None, None, "gamma-us", "open", id="open-key-uses-global"),
    pytest.param("fr-only", None, None, "alpha-fr", "fr-only", id="key-policy"),
    pytest.param("eu-strict", {"allow_countries": ["DE"]}, None, "beta-de", "eu-strict",
                 id="body-countries"),
    pytest.param("eu-strict", {"allow_providers": ["beta"]}, None, "beta-de", "eu-strict",
                 id="body-providers"),
    pytest.param("eu", {"allow_classes": ["eu_resident"]}, None, "delta-de", "eu", id="body-classes"),
    pytest.param("open", {"policy_id": "eu"}, None, "alpha-fr", "eu", id="body-policy-id"),
    pytest.param("eu-strict", None, '{"allow_countries": ["de"]}', "beta-de", "eu-strict",
                 id="header-json"),
    pytest.param("open", None, "fr-only", "alpha-fr", "fr-only", id="header-policy-id"),
    pytest.param("open", {"allow_countries": ["DE"]}, "eu", "beta-de", "eu",
                 id="header-then-body"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "body", "header", "served_by", "policy_id"), SERVED)
def test_the_call_is_served_within_the_narrowed_policy(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    policy: str,
    body: Any,
    header: str | None,
    served_by: str,
    policy_id: str,
) -> None:
    response = chat(gateway, keys[policy], narrowing=body, header=header)
    assert response.status_code == 200, response.text
    routing = response.json()["llmeu"]
    assert (routing["endpoint_id"], routing["policy_id"]) == (served_by, policy_id)
    assert contacted(upstreams) == [served_by]


# (key's policy, body field, header, error param)
WIDENING = [
    pytest.param("eu-strict", {"allow_classes": ["global"]}, None, "llmeu.allow_classes",
                 id="body-class"),
    pytest.param("eu-strict", {"policy_id": "eu"}, None, "llmeu.policy_id", id="body-policy"),
    pytest.param("fr-only", {"allow_countries": ["FR", "DE"]}, None, "llmeu.allow_countries",
                 id="body-country"),
    pytest.param("eu-strict", None, "open", "x-llmeu-policy.policy_id", id="header-policy"),
    pytest.param("eu", None, '{"allow_classes": ["global"]}', "x-llmeu-policy.allow_classes",
                 id="header-class"),
    pytest.param("open", {"allow_classes": ["global"]}, "eu-strict", "llmeu.allow_classes",
                 id="body-cannot-undo-header"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "body", "header", "param"), WIDENING)
def test_a_widening_is_a_403_naming_the_field(
    gateway: Gateway,
    keys: dict[str, str],
    upstreams: dict[str, FakeUpstream],
    policy: str,
    body: Any,
    header: str | None,
    param: str,
) -> None:
    response = chat(gateway, keys[policy], narrowing=body, header=header)
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "permission_error",
        "policy_widening",
        param,
    )
    assert f"`{param}`" in error["message"]
    if param.endswith("policy_id"):  # the named policy admits more classes than the key's
        assert "in `allow_classes`" in error["message"]
    assert contacted(upstreams) == []


def test_a_narrowing_that_leaves_nothing_is_no_compliant_route(
    gateway: Gateway, keys: dict[str, str], upstreams: dict[str, FakeUpstream]
) -> None:
    response = chat(gateway, keys["eu-strict"], narrowing={"allow_countries": ["NL"]})
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "no_compliant_route"
    assert [(d["endpoint_id"], d["rule"]) for d in error["details"]] == [
        ("alpha-fr", "allow_countries"),
        ("beta-de", "allow_countries"),
        ("delta-de", "allow_classes"),
        ("gamma-us", "allow_classes"),
    ]
    assert contacted(upstreams) == []


@pytest.mark.parametrize(
    ("header", "param"),
    [
        pytest.param("{not json", "x-llmeu-policy", id="invalid-json"),
        pytest.param('{"allow_regions": ["fr-par"]}', "x-llmeu-policy", id="unknown-field"),
        pytest.param("no-such-policy", "x-llmeu-policy.policy_id", id="unknown-policy"),
    ],
)
def test_a_malformed_header_is_a_400(
    gateway: Gateway, keys: dict[str, str], header: str, param: str
) -> None:
    response = chat(gateway, keys["eu-strict"], header=header)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


def models(gateway: Gateway, key: str, header: str | None = None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {key}"}
    if header is not None:
        headers["x-llmeu-policy"] = header
    response = httpx.get(f"{gateway.base_url}/models", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    return {m["id"]: m for m in response.json()["data"]}


# (key's policy, header, model → the endpoints listed for it)
REACHABLE = [
    pytest.param("eu-strict", None,
                 {"shared": ["alpha-fr", "beta-de"], "german": ["beta-de"]}, id="eu-strict"),
    pytest.param("eu", None,
                 {"shared": ["alpha-fr", "beta-de", "delta-de"], "german": ["beta-de"],
                  "resident-only": ["delta-de"]}, id="eu"),
    pytest.param("open", None,
                 {"shared": ["alpha-fr", "beta-de", "delta-de", "gamma-us"], "german": ["beta-de"],
                  "resident-only": ["delta-de"], "global-only": ["gamma-us"]}, id="open"),
    pytest.param("fr-only", None, {"shared": ["alpha-fr"]}, id="fr-only"),
    pytest.param("open", '{"allow_countries": ["DE"]}',
                 {"shared": ["beta-de", "delta-de"], "german": ["beta-de"],
                  "resident-only": ["delta-de"]}, id="header-narrowed"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "header", "expected"), REACHABLE)
def test_models_lists_only_what_the_policy_can_reach(
    gateway: Gateway,
    keys: dict[str, str],
    policy: str,
    header: str | None,
    expected: dict[str, list[str]],
) -> None:
    listed = models(gateway, keys[policy], header)
    assert {
        name: [e["endpoint_id"] for e in m["llmeu"]["endpoints"]] for name, m in listed.items()
    } == expected
    assert "keyless" not in listed, "an endpoint without its API key is not reachable"


def test_models_carry_sovereignty_metadata(gateway: Gateway, keys: dict[str, str]) -> None:
    shared = models(gateway, keys["eu"])["shared"]
    assert shared["object"] == "model"
    meta = shared["llmeu"]
    assert meta["policy_id"] == "eu"
    assert meta["providers"] == ["alpha", "beta", "delta"]
    assert meta["regions"] == ["test-1"]
    assert meta["sovereignty_classes"] == ["eu_resident", "eu_sovereign"]
    delta = next(e for e in meta["endpoints"] if e["endpoint_id"] == "delta-de")
    assert delta == {
        "endpoint_id": "delta-de", "provider": "delta", "model": "fake", "model_version": "1",
        "inference_region": "test-1", "country": "DE", "jurisdiction": None, "certifications": [],
        "seal": None, "sovereignty_class": "eu_resident",
        "retention": "P0D", "provider_retention": "P0D",
        "price_eur_per_mtok": {"input": 1.0, "output": 2.0},
    }  # fmt: skip


def test_a_model_the_policy_cannot_reach_is_not_found(
    gateway: Gateway, keys: dict[str, str]
) -> None:
    headers = {"authorization": f"Bearer {keys['eu-strict']}"}
    hidden = httpx.get(f"{gateway.base_url}/models/global-only", headers=headers, timeout=10)
    assert hidden.status_code == 404
    shown = httpx.get(f"{gateway.base_url}/models/german", headers=headers, timeout=10)
    assert shown.status_code == 200
    assert shown.json()["llmeu"]["endpoints"][0]["endpoint_id"] == "beta-de"
