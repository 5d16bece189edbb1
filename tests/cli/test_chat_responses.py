"""`llmeu chat --api responses` against a real gateway: the answer streamed through
`/v1/responses`, and a broken Responses stream reported as broken, never as an answer."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from tests.support.client_terminal import REPO, llmeu_command
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


def run_chat(gateway: Gateway, *args: str) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("LLMEU_")}
    command = llmeu_command("chat", "--base-url", gateway.base_url, "--api-key",
                            gateway.admin_key, "--model", "fake-model", "--api", "responses",
                            *args)  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False,
        env={**inherited, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def test_the_answer_streams_through_the_responses_api(
    gateway: Gateway, fake_upstream: FakeUpstream
) -> None:
    done = run_chat(gateway, "--max-tokens", "9", "--system", "be brief", "hi [[chunks=3]]")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tok0 tok1 tok2 \n"
    assert "fakeprov" in done.stderr and "trace trc_" in done.stderr
    seen = fake_upstream.stats()[-1]
    assert seen["path"] == "/v1/chat/completions" and seen["stream"] is True
    assert seen["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi [[chunks=3]]"},
    ]


def test_a_failed_response_is_reported_with_the_text_received(gateway: Gateway) -> None:
    done = run_chat(gateway, "hi [[chunks=6;fault=error_event]]")
    assert done.returncode == 1
    assert done.stdout.startswith("tok0 tok1 tok2 ")
    assert "the server broke off the answer" in done.stderr
