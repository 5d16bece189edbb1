"""Evasions of the personal-data scan, on a real gateway: every form, every field, every surface.

Each form a value was typed in to slip past the scan (`tests/personal/evasions.py`:
fullwidth, mathematical or Arabic-Indic digits, invisible characters or a NUL
inside, lowercase, other groupings, split across two parts) is placed in each
field a surface forwards (`tests/personal/placements.py`: message text, `user`,
a message's name, `metadata`, tool and parameter descriptions, `stop`, schemas,
`instructions`, `safety_identifier`, `system`, `metadata.user_id`…) on chat
completions, Responses, Messages, embeddings and `count_tokens`, under three
policies. What reached an upstream is read from the fake upstreams' own logs:

- `block`: the call is refused and no upstream gets anything;
- `mask`: the upstream gets the call, in which no form of any value is left
  (read by the test's own reading of text, `canonical`), on every kind of
  upstream a surface reaches: OpenAI-compatible, a Responses API passed through,
  Anthropic's Messages API;
- `restrict`: the call goes to the `eu_sovereign` endpoint, never to the
  `eu_resident` one tried first otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.personal.evasions import FORMS, SPLIT, leaked
from tests.personal.placements import CHAT, EMBEDDINGS, MESSAGES, RESPONSES, SPLIT_FIELDS, Placement
from tests.support.anthropic_upstream import (
    FAKE_ANTHROPIC_KEY,
    anthropic_endpoint,
    start_fake_anthropic,
)
from tests.support.processes import (
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

DETECTORS = "{iban: %s, payment_card: %s, de_steuer_id: %s, email: %s}"
POLICIES = "".join(
    f"""
  - policy_id: pd-{action}
    allow_classes: [eu_sovereign, eu_resident]
    max_retention: P0D
    personal_data:
      detectors: {DETECTORS % ((action,) * 4)}
      restrict: {{allow_classes: [eu_sovereign]}}
"""
    for action in ("block", "mask", "restrict")
)
ROUTES = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages",
          "embeddings": "/embeddings", "count_tokens": "/messages/count_tokens"}  # fmt: skip
FIELDS: dict[str, dict[str, Placement]] = {"chat": CHAT, "responses": RESPONSES,
    "messages": MESSAGES, "embeddings": EMBEDDINGS, "count_tokens": MESSAGES}  # fmt: skip
SHARED = "shared"  # served by an eu_resident endpoint tried first, then an eu_sovereign one
KINDS = {"chat": (SHARED,), "responses": (SHARED, "native"), "messages": (SHARED, "claude"),
         "embeddings": (SHARED,), "count_tokens": ("claude",)}  # fmt: skip
CASES = [(surface, field) for surface, fields in FIELDS.items() for field in fields]


def values_of(field: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every form as the values to place (the split one where the field has two parts)."""
    forms = [(name, (value,)) for name, (_, value) in FORMS.items()]
    return forms + ([("split", SPLIT[1])] if field in SPLIT_FIELDS else [])


def chunks(field: str) -> list[tuple[str, ...]]:
    """The forms packed a few to a value (each field holds at least 200 characters), a masked
    upstream body then showing at once whether any of them got through."""
    packed, chunk = [], []
    for name, values in values_of(field):
        if name == "split":
            packed.append(values)
            continue
        chunk.append(values[0])
        if len(chunk) == 5:
            packed.append((" | ".join(chunk),))
            chunk = []
    return packed + ([(" | ".join(chunk),)] if chunk else [])


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FakeUpstream]]:
    started = {
        name: start_fake_upstream(tmp_path_factory.mktemp(name)) for name in ("resident", "sov")
    }
    started["native"] = start_fake_upstream(
        tmp_path_factory.mktemp("native"), "fake_responses_upstream.py"
    )
    started["claude"] = start_fake_anthropic(tmp_path_factory.mktemp("claude"))
    yield started
    for upstream in started.values():
        upstream.stop()


@pytest.fixture(scope="module")
def gateway(
    upstreams: dict[str, FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(
        fake_endpoint("resident-de", upstreams["resident"], aliases=(SHARED,), country="DE",
                      sovereignty_class="eu_resident", priority=0),
        fake_endpoint("sov-fr", upstreams["sov"], aliases=(SHARED,), priority=10),
        fake_endpoint("native-fr", upstreams["native"], aliases=("native",),
                      capabilities=("chat", "tools", "responses")),
        anthropic_endpoint("claude-fr", upstreams["claude"], aliases=("claude",)),
        policies=POLICIES,
    )  # fmt: skip
    started = start_gateway(tmp_path_factory.mktemp("gateway"), config=config,
                            env={"FAKE_ANTHROPIC_KEY": FAKE_ANTHROPIC_KEY})  # fmt: skip
    yield started
    started.kill()


@pytest.fixture(scope="module")
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.base_url, timeout=30) as made:
        yield made


@pytest.fixture(scope="module")
def keys(gateway: Gateway) -> dict[str, str]:
    return {
        action: gateway.new_key(action, f"pd-{action}") for action in ("block", "mask", "restrict")
    }


@pytest.fixture(autouse=True)
def fresh_logs(upstreams: dict[str, FakeUpstream]) -> None:
    for upstream in upstreams.values():
        upstream.reset()


def call(client: httpx.Client, key: str, surface: str, field: str, values: tuple[str, ...],
         model: str = SHARED) -> httpx.Response:  # fmt: skip
    body = {"model": model, **FIELDS[surface][field](values)}
    return client.post(ROUTES[surface], json=body, headers={"authorization": f"Bearer {key}"})


def received(upstream: FakeUpstream) -> list[Any]:
    """The bodies an upstream got (the OpenAI-compatible fake keeps them as text)."""
    bodies = [r.get("body") for r in upstream.stats()]
    return [json.loads(b) if isinstance(b, str) else b for b in bodies]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.parametrize(("surface", "field"), CASES)
def test_block_lets_no_form_reach_any_upstream(
    client: httpx.Client, keys: dict[str, str], upstreams: dict[str, FakeUpstream],
    surface: str, field: str,
) -> None:  # fmt: skip
    model = KINDS[surface][0]
    for name, values in values_of(field):
        response = call(client, keys["block"], surface, field, values, model)
        assert response.status_code == 403, (name, response.text)
        assert "personal_data" in response.text or "personal data" in response.text, name
    assert {n: u.stats() for n, u in upstreams.items()} == {n: [] for n in upstreams}


@pytest.mark.parametrize(
    ("surface", "field", "model"),
    [(s, f, m) for s, f in CASES for m in KINDS[s]],
)
def test_mask_lets_no_form_reach_any_kind_of_upstream(
    client: httpx.Client, keys: dict[str, str], upstreams: dict[str, FakeUpstream],
    surface: str, field: str, model: str,
) -> None:  # fmt: skip
    sent = chunks(field)
    for values in sent:
        response = call(client, keys["mask"], surface, field, values, model)
        assert response.status_code == 200, (values, response.text)
    bodies = [body for u in upstreams.values() for body in received(u)]
    assert len(bodies) == len(sent)
    for body in bodies:
        assert leaked(" ".join(strings(body))) == [], body


@pytest.mark.parametrize(("surface", "field"), [c for c in CASES if c[0] != "count_tokens"])
def test_restrict_keeps_every_form_off_the_unrestricted_route(
    client: httpx.Client, keys: dict[str, str], upstreams: dict[str, FakeUpstream],
    surface: str, field: str,
) -> None:  # fmt: skip
    forms = values_of(field)
    for name, values in forms:
        response = call(client, keys["restrict"], surface, field, values)
        assert response.status_code == 200, (name, response.text)
    assert upstreams["resident"].stats() == []
    assert len(upstreams["sov"].stats()) == len(forms)
