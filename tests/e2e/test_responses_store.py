"""Stored responses honour the policy: `store` keeps a response only where the effective
policy's `store_content` allows, for that long, for the key that made it; continued with
`previous_response_id`, read, listed, deleted, expired and erased by data subject — through
the official `openai` SDK against a real gateway process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response

from tests.support.processes import STORE_POLICY, FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

SHORT_POLICY = (
    STORE_POLICY
    + """
  - policy_id: eu-short
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: PT2S
"""
)


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(
        config=config_yaml(
            fake_endpoint("fakeprov-fr-a", fake_upstream), policies=SHORT_POLICY,
            default_policy="eu-store",
        )
    )  # fmt: skip


def sdk(gateway: Gateway, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key or gateway.admin_key, max_retries=0)


def new_key(gateway: Gateway, name: str, policy_id: str = "eu-store") -> str:
    created = httpx.post(
        f"{gateway.url}/v1/platform/keys",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        json={"name": name, "policy_id": policy_id},
    )
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


@pytest.mark.parametrize("stream", [False, True], ids=["created", "streamed"])
def test_a_stored_response_is_read_listed_continued_and_deleted(
    gateway: Gateway, fake_upstream: FakeUpstream, stream: bool
) -> None:
    client = sdk(gateway)
    if stream:
        with client.responses.stream(model="fake-model", input="My name is Ana. [[chunks=2]]",
                                     instructions="be kind") as events:  # fmt: skip
            first = events.get_final_response()
    else:
        first = client.responses.create(
            model="fake-model", input="My name is Ana. [[chunks=2]]", instructions="be kind"
        )
    assert first.store is True

    again = client.responses.retrieve(first.id)
    Response.model_validate(again.model_dump())
    assert again.id == first.id and again.output_text == first.output_text
    assert again.model_extra["llmeu"]["trace_id"][4:] == first.id[5:]  # type: ignore[index]

    items = client.responses.input_items.list(first.id)
    assert [i.type for i in items.data] == ["message"]
    assert items.data[0].content[0].text == "My name is Ana. [[chunks=2]]"  # type: ignore[union-attr]

    second = client.responses.create(
        model="fake-model", input="What is my name? [[chunks=1]]", previous_response_id=first.id
    )
    assert second.previous_response_id == first.id
    assert fake_upstream.stats()[-1]["messages"] == [
        {"role": "user", "content": "My name is Ana. [[chunks=2]]"},
        {"role": "assistant", "content": [{"type": "text", "text": first.output_text}]},
        {"role": "user", "content": "What is my name? [[chunks=1]]"},
    ]  # instructions are not carried over, as on OpenAI

    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="fake-model", input="x", previous_response_id=first.id)
    assert caught.value.body["param"] == "previous_response_id"  # type: ignore[index]


def test_another_key_sees_no_stored_response(gateway: Gateway) -> None:
    alice = sdk(gateway, new_key(gateway, "alice"))
    bob = sdk(gateway, new_key(gateway, "bob"))
    mine = alice.responses.create(model="fake-model", input="secret")
    assert mine.store is True
    for call in (
        lambda: bob.responses.retrieve(mine.id),
        lambda: bob.responses.delete(mine.id),
        lambda: bob.responses.input_items.list(mine.id),
        lambda: bob.responses.create(model="fake-model", input="x", previous_response_id=mine.id),
    ):
        with pytest.raises(openai.NotFoundError):
            call()
    assert alice.responses.retrieve(mine.id).id == mine.id


def test_a_policy_that_stores_nothing_answers_without_storing(gateway: Gateway) -> None:
    strict = sdk(gateway, new_key(gateway, "strict", "eu-strict"))
    raw = strict.responses.with_raw_response.create(model="fake-model", input="hello", store=True)
    response = raw.parse()
    assert response.store is False and response.output_text
    # The answer says why it was not stored, and so do the 404s: the policy, not a mystery.
    notice = raw.headers["x-llmeu-notice"]
    assert "policy eu-strict keeps no content (store_content P0D)" in notice
    with pytest.raises(openai.NotFoundError) as retrieved:
        strict.responses.retrieve(response.id)
    assert "policy eu-strict keeps no content" in retrieved.value.message
    with pytest.raises(openai.NotFoundError) as continued:
        strict.responses.create(model="fake-model", input="x", previous_response_id=response.id)
    assert "store_content P0D" in continued.value.message

    client = sdk(gateway)
    kept = client.responses.create(model="fake-model", input="hello")
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model="fake-model", input="x", previous_response_id=kept.id,
            extra_body={"llmeu": {"policy_id": "eu-strict"}},
        )  # fmt: skip
    assert caught.value.body["param"] == "previous_response_id"  # type: ignore[index]
    not_kept = client.responses.create(model="fake-model", input="hello", store=False)
    assert not_kept.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(not_kept.id)


def test_a_stored_response_expires_with_the_policy(gateway: Gateway) -> None:
    client = sdk(gateway, new_key(gateway, "short", "eu-short"))
    response = client.responses.create(model="fake-model", input="hello")
    assert response.store is True

    def gone() -> bool:
        try:
            client.responses.retrieve(response.id)
        except openai.NotFoundError:
            return True
        return False

    wait_for(gone, what="the stored response to expire")


def test_erasing_a_data_subject_erases_their_stored_responses(gateway: Gateway) -> None:
    client = sdk(gateway)
    theirs = client.responses.create(model="fake-model", input="hi", safety_identifier="ana")
    others = client.responses.create(model="fake-model", input="hi", user="bo")
    erased = httpx.delete(
        f"{gateway.url}/v1/platform/subjects/ana",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
    )
    assert erased.status_code == 200, erased.text
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(theirs.id)
    assert client.responses.retrieve(others.id).id == others.id


def test_input_items_page_in_both_orders(gateway: Gateway) -> None:
    client = sdk(gateway)
    items: list[Any] = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    response = client.responses.create(model="fake-model", input=items)
    newest = client.responses.input_items.list(response.id, limit=2)
    assert [i.content[0].text for i in newest.data] == ["three", "two"]  # type: ignore[union-attr]
    assert newest.has_more is True
    rest = client.responses.input_items.list(response.id, after=newest.data[-1].id)
    assert [i.content[0].text for i in rest.data] == ["one"]  # type: ignore[union-attr]
    oldest = client.responses.input_items.list(response.id, order="asc")
    assert [i.content[0].text for i in oldest.data] == ["one", "two", "three"]  # type: ignore[union-attr]
