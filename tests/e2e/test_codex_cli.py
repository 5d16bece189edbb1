"""Codex CLI, unchanged, through a real `llmeu serve`: `codex exec` with llmeu as its model
provider (`wire_api = "responses"`) answers, on the fake upstream and on the embedded default
(its ~5,100-token prompt, tools included, fits the bundled model's 8,192), and a turn that runs
a shell command through its `exec_command` tool gets the command's output back and completes.

The CLI comes from `tests/clients/node` (`make install` runs `npm ci` there). On the fake
upstream it runs with its sandbox and approvals off (`--dangerously-bypass-approvals-and-sandbox`):
the one command it runs is the test's `echo` in a temporary directory, and what is under test
is the gateway's wire. On the bundled model, whose choice of command nobody scripts, it keeps
its read-only sandbox.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.client_traces import settled_trace
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint, start_gateway

CODEX = Path(__file__).parents[1] / "clients" / "node" / "node_modules" / ".bin" / "codex"
AGENTS_PAGE = Path(__file__).parents[2] / "docs" / "agents.md"
DOCUMENTED_URL = "http://127.0.0.1:8080/v1"
TOML_BLOCK = re.compile(r"^```toml\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# The page's first TOML block, as a user copies it into ~/.codex/config.toml.
CONFIG = TOML_BLOCK.findall(AGENTS_PAGE.read_text(encoding="utf-8"))[0]

pytestmark = pytest.mark.skipif(
    not CODEX.exists(), reason="the Codex CLI is installed by `make install` (needs npm)"
)


@pytest.fixture(scope="module")
def gateway(
    upstream_process: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", upstream_process))
    gateway = start_gateway(tmp_path_factory.mktemp("codex"), config=config)
    yield gateway
    gateway.kill()


@pytest.fixture(scope="module")
def local_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started = start_gateway(tmp_path_factory.mktemp("codex-local"), local_models=True, timeout=120)
    yield started
    started.kill()


def codex_exec(
    gateway: Gateway, prompt: str, tmp: Path, *, model: str = "fake-model", sandboxed: bool = False
) -> subprocess.CompletedProcess[str]:
    """`codex exec PROMPT` with llmeu as its model provider, configured by docs/agents.md."""
    home, work = tmp / "codex-home", tmp / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(CONFIG.replace(DOCUMENTED_URL, gateway.base_url))
    command = [
        str(CODEX), "exec", "--skip-git-repo-check",
        *(["--sandbox", "read-only"] if sandboxed else ["--dangerously-bypass-approvals-and-sandbox"]),
        "-c", f"model={model}", prompt,
    ]  # fmt: skip
    env = {**os.environ, "CODEX_HOME": str(home), "LLMEU_API_KEY": gateway.admin_key}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        command, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def traces(gateway: Gateway) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{gateway.base_url}/platform/traces?limit=100",
        headers={"authorization": f"Bearer {gateway.admin_key}"},
        timeout=10,
    )
    response.raise_for_status()
    return [settled_trace(gateway, t["id"]) for t in response.json()["data"]]


def test_codex_exec_answers(gateway: Gateway, fake_upstream: FakeUpstream, tmp_path: Path) -> None:
    done = codex_exec(gateway, "say hi [[chunks=3]]", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tok0 tok1 tok2" in done.stdout
    (request,) = fake_upstream.stats()
    assert request["path"].endswith("/chat/completions") and request["stream"]


def test_codex_runs_a_shell_command_and_reads_its_output(
    gateway: Gateway, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    prompt = '[[tools=1;call=exec_command;args={"cmd": "echo llmeu-codex-ok"}]]'
    done = codex_exec(gateway, prompt, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "llmeu-codex-ok" in done.stdout + done.stderr
    assert "tok0" in done.stdout
    call, answer = fake_upstream.stats()
    # the first turn carried Codex's tools as functions (its namespaced tools flattened), its
    # hosted tools dropped under the default policy
    sent = json.loads(call["body"])
    names = {tool["function"]["name"] for tool in sent["tools"]}
    assert "exec_command" in names
    assert any(name.startswith("multi_agent_v1__") for name in names)
    assert "web_search" not in names
    # the second turn carried the command's output back as the tool's result
    result = answer["messages"][-1]
    assert result["role"] == "tool" and "llmeu-codex-ok" in str(result["content"])
    assert answer["directives"] == {}
    settled = [t for t in traces(gateway) if t["status"] == "completed"]
    assert len(settled) >= 2


@pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra")
def test_codex_exec_answers_on_the_embedded_default(local_gateway: Gateway, tmp_path: Path) -> None:
    question = "What is the capital of France? Answer in one word."
    done = codex_exec(local_gateway, question, tmp_path, model="smollm2", sandboxed=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    (first, *_) = reversed(traces(local_gateway))
    assert first["status"] == "completed", first
    assert 4000 < first["usage"]["input_tokens"] <= 8192


def test_the_documented_config_names_llmeu_as_a_responses_provider() -> None:
    assert DOCUMENTED_URL in CONFIG
    assert 'model_provider = "llmeu"' in CONFIG and 'wire_api = "responses"' in CONFIG
