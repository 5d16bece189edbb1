"""Running the code blocks of the documentation as their reader would.

A page's fenced block runs as its own process: Python with this interpreter (or the
environment a client needs apart), JavaScript with Node beside the locked Node clients,
shell with `sh -eu`. `runnable_blocks` finds the blocks a page marks with
`<!-- runnable -->` on the line above the fence.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, Gateway

NODE_CLIENTS = REPO / "tests" / "clients" / "node"
# Clients whose dependencies cannot share the test environment, each with its interpreter.
APART = {"LlamaIndex": REPO / "build" / "llamaindex-venv" / "bin" / "python"}
MARK = "<!-- runnable -->"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_LANGUAGES = {"python": "python", "js": "js", "javascript": "js", "sh": "sh", "shell": "sh"}


def runnable_blocks(markdown: str) -> list[tuple[str, str]]:
    """The (language, code) of every fenced block whose fence follows the runnable mark."""
    blocks = []
    for match in _FENCE.finditer(markdown):
        before = markdown[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.strip() == MARK:
            blocks.append((_LANGUAGES[match.group(1)], match.group(2)))
    return blocks


def snippet_command(language: str, code: str, workdir: Path, client: str = "") -> list[str]:
    """Write `code` into `workdir` and return the command that runs it."""
    if language == "python":
        path = workdir / "snippet.py"
        path.write_text(code, encoding="utf-8")
        python = sys.executable
        if client in APART:  # its own environment: see the Makefile's LLAMAINDEX
            python = str(APART[client])
            assert Path(python).exists(), f"{python} is missing: run `make install`"
        return [python, str(path)]
    if language == "js":
        if shutil.which("node") is None:
            pytest.skip("needs Node")
        modules = NODE_CLIENTS / "node_modules"
        assert modules.is_dir(), "the Node clients are missing: run `make install`"
        (workdir / "node_modules").symlink_to(modules)
        path = workdir / "snippet.mjs"
        path.write_text(code, encoding="utf-8")
        return ["node", str(path)]
    assert language == "sh"
    path = workdir / "snippet.sh"
    path.write_text("set -eu\n" + code, encoding="utf-8")
    return ["sh", str(path)]


def run_snippet(
    language: str, code: str, workdir: Path, gateway: Gateway, client: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run a snippet against `gateway` with the variables its reader exports: the OpenAI
    SDKs' base URL and key, and `LLMEU_API_KEY`."""
    environment = {
        **os.environ,
        "OPENAI_BASE_URL": gateway.base_url,
        "OPENAI_API_KEY": gateway.admin_key,
        "LLMEU_API_KEY": gateway.admin_key,
        # litellm reads its price list from the network unless told to use its bundled copy.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return subprocess.run(
        snippet_command(language, code, workdir, client),
        env=environment,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
