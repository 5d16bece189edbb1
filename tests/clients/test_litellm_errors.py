"""How litellm, as a client (`openai/` models), sees each error llmeu answers.

llmeu keeps OpenAI's error shape. litellm maps an OpenAI-compatible error by
status for 400, 401, 404 and 429, and any other status, 403 among them, to
its generic `APIError` whatever the body's `type` or `code` say: a
`no_compliant_route` reaches a litellm caller as `APIError` with
`status_code == 403` (docs/clients.md says so). It is a policy outcome, so
litellm must not retry it: the gateway records exactly one rejected call.
"""

from __future__ import annotations

import json
import os
import urllib.request
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

# litellm's types make pydantic warn when a call first builds their schemas.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* `ReadOnly` qualifier:UserWarning")


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    """litellm, reading its bundled price list rather than fetching one from the network."""
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setitem(os.environ, "LITELLM_LOCAL_MODEL_COST_MAP", "True")
        warnings.simplefilter("ignore")
        import litellm

    return litellm


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


def complete(litellm: ModuleType, gateway: Gateway, **overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "model": "openai/fake-model",
        "api_base": gateway.base_url,
        "api_key": gateway.admin_key,
        "messages": [{"role": "user", "content": "hi"}],
        **overrides,
    }
    response = litellm.completion(**arguments)
    if arguments.get("stream"):
        return list(response)
    return response


def rejected_traces(gateway: Gateway) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"{gateway.base_url}/platform/traces?status=rejected",
        headers={"Authorization": f"Bearer {gateway.admin_key}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        traces: list[dict[str, Any]] = json.loads(response.read())["data"]
        return traces


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_no_compliant_route_is_an_api_error_with_status_403(
    litellm: ModuleType, gateway: Gateway, stream: bool
) -> None:
    narrowing = {"llmeu": {"allow_classes": ["on_premise"]}}
    with pytest.raises(litellm.APIError) as caught:
        complete(litellm, gateway, extra_body=narrowing, stream=stream)
    error = caught.value
    assert not isinstance(error, litellm.RateLimitError | litellm.ServiceUnavailableError)
    assert error.status_code == 403
    assert "No endpoint for `fake-model` satisfies policy `eu-strict`" in error.message
    assert "sovereignty class eu_sovereign is not in [on_premise]" in error.message
    assert len(rejected_traces(gateway)) == 1, "litellm retried a policy refusal"


@pytest.mark.parametrize(
    ("overrides", "expected", "status"),
    [
        ({"api_key": "sk-llmeu-wrong"}, "AuthenticationError", 401),
        ({"model": "openai/no-such-model"}, "NotFoundError", 404),
        ({"n": 2}, "BadRequestError", 400),
    ],
    ids=["401-key", "404-model", "400-param"],
)
def test_other_errors_reach_litellm_as_its_own_classes(
    litellm: ModuleType, gateway: Gateway, overrides: dict[str, Any], expected: str, status: int
) -> None:
    with pytest.raises(getattr(litellm, expected)) as caught:
        complete(litellm, gateway, **overrides)
    assert getattr(caught.value, "status_code", None) == status
