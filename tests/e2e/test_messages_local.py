"""`/v1/messages` on the bundled model: real tokens, exact counts, what Claude Code sends."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.support.client_traces import settled_trace
from tests.support.processes import Gateway, start_gateway

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]
QUESTION: Any = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def local_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = start_gateway(tmp_path_factory.mktemp("local-messages"), local_models=True,
                            timeout=180)  # fmt: skip
    yield gateway
    gateway.kill()


@pytest.fixture
def client(local_gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=local_gateway.url, api_key=local_gateway.admin_key, max_retries=0
    )


def test_the_local_model_streams_and_counts_exactly(
    client: anthropic.Anthropic, local_gateway: Gateway
) -> None:
    with client.messages.stream(model="smollm2", max_tokens=12, messages=QUESTION) as stream:
        events = list(stream)
        final = stream.get_final_message()
    pieces = [e.delta.text for e in events if e.type == "content_block_delta"]  # type: ignore[union-attr]
    start = next(e for e in events if e.type == "message_start")
    assert start.message.usage.input_tokens == final.usage.input_tokens  # type: ignore[union-attr]
    assert len(pieces) >= 2 and "".join(pieces) == final.content[0].text  # type: ignore[union-attr]
    assert 0 < final.usage.output_tokens <= 12
    counted = client.messages.count_tokens(model="smollm2", messages=QUESTION)
    # The model's own tokenizer and chat template: the same count as the call's.
    assert counted.input_tokens == final.usage.input_tokens
    assert not (counted.model_extra or {}).get("estimated")
    trace = settled_trace(local_gateway, "trc_" + final.id[4:])
    assert trace["usage"]["estimated"] is False
    assert trace["usage"]["output_tokens"] == final.usage.output_tokens


def test_a_claude_code_shaped_call_without_tools_is_answered(client: anthropic.Anthropic) -> None:
    """Claude Code's `-p --tools "" --system-prompt …` request: system blocks with cache
    control, adaptive thinking, effort, context management, beta headers, `?beta=true`."""
    message = client.messages.create(
        model="smollm2", max_tokens=8, thinking={"type": "adaptive"},
        system=[{"type": "text", "text": "Answer in one short sentence.",
                 "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "Capital of France?",
                                                "cache_control": {"type": "ephemeral"}}]}],
        metadata={"user_id": '{"device_id":"d","session_id":"s"}'},
        extra_body={"context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
                    "output_config": {"effort": "high"}},
        extra_headers={"anthropic-beta": "claude-code-20250219,effort-2025-11-24"},
        extra_query={"beta": "true"},
    )  # fmt: skip
    assert message.content[0].type == "text" and message.usage.output_tokens > 0


BOUNDED = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "thinking"),
        ({"tools": [{"name": "f", "input_schema": BOUNDED}]}, "tools[0]"),
    ],
    ids=["thinking", "tool-schema-beyond-the-grammar"],
)
def test_what_the_local_model_cannot_do_is_a_400_naming_it(
    client: anthropic.Anthropic, kwargs: dict[str, Any], param: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="smollm2", max_tokens=2000, messages=QUESTION, **kwargs)
    assert caught.value.body["error"]["param"] == param  # type: ignore[index]


CLAUDE = os.environ.get("LLMEU_CLAUDE_CODE_CLI") or shutil.which("claude")


@pytest.mark.skipif(
    CLAUDE is None,
    reason="Claude Code is proprietary and not installed by `make install`: set "
    "LLMEU_CLAUDE_CODE_CLI to its cli-wrapper.cjs (npm i @anthropic-ai/claude-code) to run it",
)
def test_claude_code_answers_through_the_local_model(local_gateway: Gateway) -> None:
    assert CLAUDE is not None
    command = ["node", CLAUDE] if CLAUDE.endswith((".cjs", ".js")) else [CLAUDE]
    home = Path(local_gateway.data_dir) / "claude-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": local_gateway.url,
           "ANTHROPIC_API_KEY": local_gateway.admin_key, "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    done = subprocess.run(
        [*command, "-p", "What is the capital of France?", "--model", "smollm2", "--tools", "",
         "--bare", "--system-prompt", "Answer in one short sentence."],
        env=env, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
