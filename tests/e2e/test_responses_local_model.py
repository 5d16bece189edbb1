"""The bundled SmolLM2 through `/v1/responses`: real tokens, streamed and not, on premise."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.support.openai_schema import check_response, check_stream_event
from tests.support.processes import Gateway, start_gateway

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


@pytest.fixture(scope="module")
def local_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = start_gateway(tmp_path_factory.mktemp("local"), local_models=True, timeout=120)
    yield gateway
    gateway.kill()


def test_the_local_model_streams_real_tokens_as_response_events(local_gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=local_gateway.base_url, api_key=local_gateway.admin_key)
    events = list(
        client.responses.create(
            model="smollm2", input="What is the capital of France?", max_output_tokens=24,
            temperature=0, stream=True,
        )
    )  # fmt: skip
    for event in events:
        EVENTS.validate_python(event.model_dump())
        check_stream_event(event.model_dump(mode="json", exclude_unset=True))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) >= 3, "a real model streams several deltas"
    last = events[-1]
    assert last.type in ("response.completed", "response.incomplete")
    response = last.response
    assert response.output_text == "".join(deltas)
    assert any(ch.isalpha() for ch in response.output_text)
    routing = response.model_extra["llmeu"]  # type: ignore[index]
    assert routing["sovereignty_class"] == "on_premise"
    assert response.usage is not None
    assert 0 < response.usage.output_tokens <= 24
    assert response.usage.output_tokens == routing["cost_estimate"]["output_tokens"]


def test_the_local_model_answers_a_whole_response(local_gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=local_gateway.base_url, api_key=local_gateway.admin_key)
    response = client.responses.create(
        model="smollm2", input="Say hello.", instructions="Answer in one short sentence.",
        max_output_tokens=4, temperature=0,
    )  # fmt: skip
    Response.model_validate(response.model_dump())
    check_response(response.model_dump(mode="json", exclude_unset=True))
    assert response.output_text.strip()
    assert response.usage is not None and 0 < response.usage.output_tokens <= 4
    if response.usage.output_tokens == 4:
        assert response.status == "incomplete"
        assert response.incomplete_details is not None
        assert response.incomplete_details.reason == "max_output_tokens"
