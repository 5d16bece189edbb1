"""docs/clients.md runs: every client's snippet, read from the page, against a real `llmeu serve`.

One gateway on the bundled local model serves every snippet. Each snippet runs
as its own process (Python with this interpreter, JavaScript with Node, the
shell block with `sh`), reading the gateway and the key from OPENAI_BASE_URL
and OPENAI_API_KEY as the page tells its reader. A snippet passes when it
exits 0, prints what its client exposes of the routing block or the trace id,
and the calls it made are in the ledger with the status they should have.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import REPO, Gateway, start_gateway
from tests.support.snippets import run_snippet

PAGE = REPO / "docs" / "clients.md"
TRACE_ID = re.compile(r"\btrc_[A-Za-z0-9_-]+")

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]


@dataclass(frozen=True)
class Expected:
    """What running a client's snippet must leave: its output, and the calls in the ledger."""

    language: str
    statuses: tuple[str, ...] = ("completed",)
    shows_routing_block: bool = True
    prints: tuple[str, ...] = ()


CLIENTS = {
    "Python `openai`": Expected("python"),
    "Node `openai`": Expected("js"),
    "Vercel AI SDK": Expected("js"),
    "Vercel AI SDK, Responses API": Expected("js"),
    "`@ai-sdk/openai-compatible`": Expected("js"),
    "LangChain": Expected(
        "python", ("completed", "completed"), shows_routing_block=False, prints=("384",)
    ),
    "LlamaIndex": Expected("python"),
    "litellm": Expected("python", ("completed", "rejected"), prints=("refused: 403",)),
    "pydantic-ai": Expected("python", shows_routing_block=False),
    "openai-agents": Expected("python", shows_routing_block=False),
    "curl": Expected("sh"),
}


def code_blocks(markdown: str) -> dict[str, list[tuple[str, str]]]:
    """The fenced code blocks under each `## ` heading: heading -> [(language, code)]."""
    blocks: dict[str, list[tuple[str, str]]] = {}
    heading = ""
    fence = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    position = 0
    for match in fence.finditer(markdown):
        for line in markdown[position : match.start()].splitlines():
            if line.startswith("## "):
                heading = line[3:].strip()
        position = match.end()
        if heading:
            blocks.setdefault(heading, []).append((match.group(1), match.group(2)))
    return blocks


def test_code_blocks_are_read_by_heading() -> None:
    page = "# T\n```sh\nintro\n```\n## A\ntext\n```python\nprint(1)\n```\n## B\n```js\nx\ny\n```\n"
    assert code_blocks(page) == {"A": [("python", "print(1)\n")], "B": [("js", "x\ny\n")]}


def test_the_page_has_one_snippet_per_client() -> None:
    blocks = code_blocks(PAGE.read_text(encoding="utf-8"))
    assert set(blocks) == set(CLIENTS)
    for heading, expected in CLIENTS.items():
        assert [language for language, _ in blocks[heading]] == [expected.language], heading


def test_the_readme_links_the_page() -> None:
    assert "(docs/clients.md)" in (REPO / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started = start_gateway(tmp_path_factory.mktemp("clients"), local_models=True, timeout=120)
    yield started
    started.kill()


def platform(gateway: Gateway, path: str) -> Any:
    request = urllib.request.Request(
        f"{gateway.base_url}/platform/{path}",
        headers={"Authorization": f"Bearer {gateway.admin_key}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def trace_statuses(gateway: Gateway) -> dict[str, str]:
    page = platform(gateway, "traces?limit=200")
    return {trace["id"]: trace["status"] for trace in page["data"]}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_snippet_runs_against_llmeu(client: str, gateway: Gateway, tmp_path: Path) -> None:
    expected = CLIENTS[client]
    [(language, code)] = code_blocks(PAGE.read_text(encoding="utf-8"))[client]
    before = trace_statuses(gateway)
    run = run_snippet(language, code, tmp_path, gateway, client)
    assert run.returncode == 0, f"{client} exited {run.returncode}:\n{run.stdout}\n{run.stderr}"

    printed = set(TRACE_ID.findall(run.stdout))
    assert printed, f"{client} printed no trace id:\n{run.stdout}"
    for text in expected.prints:
        assert text in run.stdout, run.stdout
    if expected.shows_routing_block:
        assert "on_premise" in run.stdout, run.stdout

    new: dict[str, str] = {}
    deadline = time.monotonic() + 10
    while len(new) < len(expected.statuses) and time.monotonic() < deadline:
        new = {t: s for t, s in trace_statuses(gateway).items() if t not in before}
        time.sleep(0.05)
    assert sorted(new.values()) == sorted(expected.statuses), new
    assert printed <= set(new), (printed, new)
    assert all(new[trace_id] == "completed" for trace_id in printed)
