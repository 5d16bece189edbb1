"""`llmeu chat` in a real terminal against a real `llmeu serve`: Ctrl-C is a cancelled call."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.support.client_terminal import Terminal, llmeu_command, tmux_available
from tests.support.client_traces import read_trace, settled_trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint

pytestmark = pytest.mark.skipif(not tmux_available(), reason="needs tmux")


@pytest.fixture
def gateway(gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream) -> Gateway:
    return gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))


def chat(gateway: Gateway, prompt: str) -> list[str]:
    return llmeu_command("chat", "--base-url", gateway.base_url, "--api-key", gateway.admin_key,
                         "--model", "fake-model", prompt)  # fmt: skip


def trace_id_on(screen: str) -> str:
    found = re.search(r"trace (trc_\w+)", screen)
    assert found, f"no trace id on the screen:\n{screen}"
    return found.group(1)


def test_answer_shows_where_it_ran_and_its_trace(gateway: Gateway) -> None:
    with Terminal(chat(gateway, "hi [[chunks=5]]")) as term:
        status = term.exit_status()
        screen = term.screen()
    assert status == 0
    assert "tok0 tok1 tok2 tok3 tok4" in screen
    assert "— fakeprov · test-1 · eu_sovereign · policy eu-strict ·" in screen
    assert re.search(r"  5 tokens · TTFT \d+ ms · TPOT [\d.]+ ms · trace trc_", screen)
    assert read_trace(gateway, trace_id_on(screen))["status"] == "completed"


def test_ctrl_c_is_recorded_by_the_gateway_as_cancelled(gateway: Gateway) -> None:
    with Terminal(chat(gateway, "a long story [[chunks=3000;delay=10]]")) as term:
        term.wait_for("tok3")
        term.send("C-c")
        status = term.exit_status()
        screen = term.screen()
    assert status == 130
    assert "⏹ cancelled — the answer above is partial · trace trc_" in screen
    assert "tok2999" not in screen
    trace = settled_trace(gateway, trace_id_on(screen))
    assert trace["status"] == "cancelled"
    assert trace["usage"]["output_tokens"] is not None


@pytest.mark.parametrize(
    "variables",
    [
        pytest.param(("LLMEU_BASE_URL", "LLMEU_API_KEY"), id="llmeu-root-url"),
        pytest.param(("OPENAI_BASE_URL", "OPENAI_API_KEY"), id="openai-root-url"),
    ],
)
def test_the_gateways_root_url_from_the_environment_works(
    gateway: Gateway, variables: tuple[str, str]
) -> None:
    # The README's curl names the root; `llmeu chat` used to want …/v1 (a 404 otherwise).
    url_variable, key_variable = variables
    env = {url_variable: gateway.url, key_variable: gateway.admin_key}
    command = llmeu_command("chat", "--model", "fake-model", "hi [[chunks=2]]")
    with Terminal(command, env=env) as term:
        status = term.exit_status()
        screen = term.screen()
    assert status == 0, screen
    assert "tok0 tok1" in screen
