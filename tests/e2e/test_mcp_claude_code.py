"""Claude Code as an MCP client of the gateway: `claude mcp add --transport http`, then its
own health check of the server (`claude mcp list`), which connects and lists the tools.
Skipped where Claude Code is not installed (`npm install -g @anthropic-ai/claude-code`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_processes import McpSetup, start_mcp_setup

CLAUDE = shutil.which("claude")
pytestmark = pytest.mark.skipif(
    CLAUDE is None, reason="Claude Code (`claude`) is not installed on this machine"
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSetup]:
    started = start_mcp_setup(tmp_path_factory.mktemp("mcp"))
    yield started
    started.stop()


def test_claude_code_connects_to_the_gateway(setup: McpSetup, tmp_path: Path) -> None:
    assert CLAUDE is not None
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")}

    def claude(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLAUDE, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip

    added = claude("mcp", "add", "--transport", "http", "llmeu", setup.url,
                   "--header", f"Authorization: Bearer {setup.key()}")  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = claude("mcp", "list")
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("llmeu"))
    assert "Connected" in line, listed.stdout
    assert setup.servers["search"].stats()["requests"] == 0
