"""GET /v1/models: the models the caller's policy can reach, with sovereignty metadata."""

from __future__ import annotations

from typing import Any

from llmeu.api.gateway import Gateway
from llmeu.api.http import Request, send_response
from llmeu.errors import NotFound
from llmeu.protocol.wire import encoder
from llmeu.routing.catalog import Endpoint
from llmeu.routing.policy import Policy


def reachable_models(gw: Gateway, policy: Policy) -> dict[str, list[Endpoint]]:
    """Alias → the endpoints serving it that the policy admits and that are configured."""
    models: dict[str, list[Endpoint]] = {}
    for endpoint in gw.config.catalog.endpoints:
        if endpoint.endpoint_id in gw.unavailable or not policy.admits(endpoint):
            continue
        for alias in endpoint.aliases or (endpoint.model,):
            models.setdefault(alias, []).append(endpoint)
    return models


def model_object(
    gw: Gateway, name: str, endpoints: list[Endpoint], policy: Policy
) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": int(gw.started_at),
        "owned_by": endpoints[0].provider,
        "llmeu": {
            "policy_id": policy.policy_id,
            "capabilities": sorted({c.value for e in endpoints for c in e.capabilities}),
            "providers": sorted({e.provider for e in endpoints}),
            "regions": sorted({e.inference_region for e in endpoints}),
            "sovereignty_classes": sorted({e.sovereignty_class.value for e in endpoints}),
            "endpoints": [
                {
                    "endpoint_id": e.endpoint_id,
                    "provider": e.provider,
                    "model": e.model,
                    "model_version": e.model_version,
                    "inference_region": e.inference_region,
                    "country": e.country,
                    "sovereignty_class": e.sovereignty_class.value,
                    "retention": policy.route_retention(e).text,
                    "provider_retention": e.retention.text,
                    "price_eur_per_mtok": {"input": e.prices.input, "output": e.prices.output},
                }
                for e in endpoints
            ],
        },
    }


async def handle_models(gw: Gateway, request: Request, model: str | None = None) -> None:
    key = await gw.keys.authenticate(request.header(b"authorization"))
    policy = gw.policies.effective(key.policy_id, None, request.header(b"x-llmeu-policy"))
    models = reachable_models(gw, policy)
    if model is not None:
        if model not in models:
            raise NotFound(
                f"The model `{model}` does not exist", param="model", code="model_not_found"
            )
        body: dict[str, Any] = model_object(gw, model, models[model], policy)
    else:
        body = {
            "object": "list",
            "data": [model_object(gw, name, eps, policy) for name, eps in models.items()],
        }
    await send_response(request.send, 200, encoder.encode(body))
