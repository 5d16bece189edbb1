"""Every block the README and docs/ mark runnable runs, as written, against a real `llmeu serve`.

One gateway on the bundled local model serves them all. A block reads the gateway and
the key where its page tells the reader to put them: OPENAI_BASE_URL and OPENAI_API_KEY,
LLMEU_API_KEY, or the default address `http://127.0.0.1:8080`, which stands here for
the test gateway's. A block passes when it exits 0 and prints the routing block of a
call that ran on the bundled model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.support.processes import REPO, Gateway, start_gateway
from tests.support.snippets import run_snippet, runnable_blocks

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DEFAULT_ADDRESS = "http://127.0.0.1:8080"
TRACE_ID = re.compile(r"\btrc_[A-Za-z0-9_-]+")
SNIPPETS = [
    pytest.param(language, code, id=f"{page.name}-{index}")
    for page in PAGES
    for index, (language, code) in enumerate(runnable_blocks(page.read_text(encoding="utf-8")))
]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]


def test_the_first_call_and_the_anthropic_stream_are_marked() -> None:
    marked = {param.id for param in SNIPPETS}
    assert {"README.md-0", "README.md-1", "quickstart.md-0", "messages.md-0"} <= marked


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    started = start_gateway(tmp_path_factory.mktemp("snippets"), local_models=True, timeout=120)
    yield started
    started.kill()


@pytest.mark.parametrize(("language", "code"), SNIPPETS)
def test_snippet_runs_as_written(
    language: str, code: str, gateway: Gateway, tmp_path: Path
) -> None:
    run = run_snippet(language, code.replace(DEFAULT_ADDRESS, gateway.url), tmp_path, gateway)
    assert run.returncode == 0, f"exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
    assert TRACE_ID.search(run.stdout), run.stdout
    assert "on_premise" in run.stdout, run.stdout
