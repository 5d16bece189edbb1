"""The catalog: cost from prices, lookup by model name, and the built-in endpoints."""

from __future__ import annotations

import pytest

from llmeu.providers.table import missing_credentials
from llmeu.routing.builtin import BUILTIN_POLICIES, builtin_catalog, provider_endpoints
from llmeu.routing.catalog import Capability, Catalog, EndpointKind, Prices, SovereigntyClass
from llmeu.routing.router import Health, plan_route
from tests.routing.factories import endpoint

COSTS = [
    pytest.param(Prices(0.15, 0.35), 12, 40, 0.0000158, id="scaleway-small"),
    pytest.param(Prices(1.0, 2.0), 1_000_000, 1_000_000, 3.0, id="a-million-each"),
    pytest.param(Prices(0.0, 0.0), 5000, 5000, 0.0, id="free-local"),
    pytest.param(Prices(0.1, 0.0), 3, 0, 0.0000003, id="embeddings-input-only"),
    pytest.param(Prices(1.29, 6.45), 0, 0, 0.0, id="no-tokens"),
    pytest.param(Prices(0.129, 0.516), 1, 1, 0.000000645, id="sub-micro-euro"),
]


@pytest.mark.parametrize(("prices", "input_tokens", "output_tokens", "amount"), COSTS)
def test_cost_is_tokens_times_price_per_million(
    prices: Prices, input_tokens: int, output_tokens: int, amount: float
) -> None:
    assert prices.cost(input_tokens, output_tokens) == pytest.approx(amount, rel=1e-9, abs=1e-15)


def test_catalog_indexes_every_name_a_client_may_send() -> None:
    a = endpoint("a", aliases=("small", "shared"))
    b = endpoint("b", aliases=("shared",))
    catalog = Catalog([a, b])
    assert catalog.serving("shared") == (a, b)
    assert catalog.serving("upstream-a") == (a,)
    assert catalog.serving("b") == (b,)
    assert catalog.serving("nothing") == ()
    assert catalog.get("a") is a
    assert catalog.get("c") is None
    assert catalog.aliases() == ["small", "shared"]


BUILTIN = builtin_catalog("testhost", "FR")


def test_builtin_ids_are_unique_and_every_provider_endpoint_needs_a_key() -> None:
    ids = [e.endpoint_id for e in BUILTIN.endpoints]
    assert len(ids) == len(set(ids))
    for e in provider_endpoints():
        assert e.kind is not EndpointKind.LOCAL
        assert e.base_url.startswith("https://") or e.upstream.base_url_env
        assert e.prices.input >= 0 and e.prices.output >= 0
    # Skipped until their credentials are set, whatever the kind.
    assert set(missing_credentials(Catalog(provider_endpoints()), {})) == {
        e.endpoint_id for e in provider_endpoints()
    }


@pytest.mark.parametrize(
    ("provider", "sovereignty_class"),
    [
        pytest.param("mistral", SovereigntyClass.EU_SOVEREIGN, id="mistral"),
        pytest.param("scaleway", SovereigntyClass.EU_SOVEREIGN, id="scaleway"),
        pytest.param("ovhcloud", SovereigntyClass.EU_SOVEREIGN, id="ovhcloud"),
        pytest.param("ionos", SovereigntyClass.EU_SOVEREIGN, id="ionos"),
        pytest.param("aws-bedrock", SovereigntyClass.EU_RESIDENT, id="aws-eu-region"),
        pytest.param("azure", SovereigntyClass.EU_RESIDENT, id="azure-eu-data-zone"),
        pytest.param("google-vertex", SovereigntyClass.EU_RESIDENT, id="vertex-europe-west"),
        pytest.param("openai", SovereigntyClass.GLOBAL, id="openai"),
        pytest.param("llmeu-local", SovereigntyClass.ON_PREMISE, id="local"),
    ],
)
def test_builtin_providers_and_their_class(
    provider: str, sovereignty_class: SovereigntyClass
) -> None:
    classes = {e.sovereignty_class for e in BUILTIN.endpoints if e.provider == provider}
    assert classes == {sovereignty_class}


def test_builtin_local_endpoints_run_on_this_machine() -> None:
    local = [e for e in BUILTIN.endpoints if e.kind is EndpointKind.LOCAL]
    assert {e.inference_region for e in local} == {"local:testhost"}
    assert {e.country for e in local} == {"FR"}
    assert {c for e in local for c in e.capabilities} == {
        Capability.CHAT,
        Capability.TOOLS,
        Capability.EMBEDDINGS,
    }


@pytest.mark.parametrize(
    ("policy_id", "model", "expected"),
    [
        pytest.param("eu-strict", "mistral-small",
                     ["scaleway-fr-par-mistral-small", "ovhcloud-gra-mistral-small"],
                     id="eu-strict-leaves-out-mistral-30-day-retention"),
        pytest.param("eu", "mistral-small",
                     ["scaleway-fr-par-mistral-small", "ovhcloud-gra-mistral-small",
                      "mistral-eu-mistral-small"], id="eu-accepts-30-days"),
        pytest.param("eu-strict", "gpt-oss-120b",
                     ["scaleway-fr-par-gpt-oss-120b", "ovhcloud-gra-gpt-oss-120b",
                      "ionos-de-txl-gpt-oss-120b"], id="eu-strict-leaves-out-aws"),
        pytest.param("eu", "gpt-oss-120b",
                     ["scaleway-fr-par-gpt-oss-120b", "ovhcloud-gra-gpt-oss-120b",
                      "ionos-de-txl-gpt-oss-120b", "aws-eu-central-1-gpt-oss-120b"],
                     id="eu-adds-aws-eu-region"),
        pytest.param("eu-strict", "smollm2", ["local-smollm2-135m"], id="local"),
    ],
)  # fmt: skip
def test_builtin_routes_with_every_key_set(policy_id: str, model: str, expected: list[str]) -> None:
    policies = {p.policy_id: p for p in BUILTIN_POLICIES}
    plan = plan_route(
        BUILTIN, model, frozenset({Capability.CHAT}), policies[policy_id], unavailable={},
        health=dict[str, Health](),
    )  # fmt: skip
    assert [e.endpoint_id for e in plan.candidates] == expected
