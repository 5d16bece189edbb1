"""GET /v1/models: the models the caller's policy can reach, with sovereignty metadata."""

from __future__ import annotations

from typing import Any

from llmeu.api.call.door import Calls
from llmeu.api.http.asgi import Request
from llmeu.api.services.endpoint_rows import where_it_runs
from llmeu.api.services.upstreams import Upstreams
from llmeu.errors import NotFound
from llmeu.protocol.json_codec import encoder
from llmeu.routing.catalog import Endpoint
from llmeu.routing.policy import Policy


def reachable_models(upstreams: Upstreams, policy: Policy) -> dict[str, list[Endpoint]]:
    """Alias → the endpoints serving it that the policy admits and that are configured."""
    models: dict[str, list[Endpoint]] = {}
    for endpoint in upstreams.catalog.endpoints:
        if endpoint.endpoint_id in upstreams.unavailable or not policy.admits(endpoint):
            continue
        for alias in endpoint.aliases or (endpoint.model,):
            models.setdefault(alias, []).append(endpoint)
    return models


def model_object(
    name: str, endpoints: list[Endpoint], policy: Policy, created: int
) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "created": created,
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
                    **where_it_runs(e),
                    "retention": policy.route_retention(e).text,
                    "provider_retention": e.retention.text,
                    "price_eur_per_mtok": {"input": e.prices.input, "output": e.prices.output},
                }
                for e in endpoints
            ],
        },
    }


async def handle_models(
    calls: Calls, started_at: float, request: Request, model: str | None = None
) -> None:
    """`GET /v1/models` (or one model with `model`); `created` is when the gateway started."""
    key = await calls.context.keys.authenticate(request.header(b"authorization"), request.client)
    policy = calls.context.policies.effective(
        key.policy_id, None, request.header(b"x-llmeu-policy")
    )
    models = reachable_models(calls.context.upstreams, policy)
    created = int(started_at)
    if model is not None:
        if model not in models:
            raise NotFound(
                f"The model `{model}` does not exist", param="model", code="model_not_found"
            )
        body: dict[str, Any] = model_object(model, models[model], policy, created)
    else:
        body = {
            "object": "list",
            "data": [model_object(name, eps, policy, created) for name, eps in models.items()],
        }
    await request.respond(200, encoder.encode(body))
