"""The official TypeScript MCP SDKs against a real gateway's `/mcp`, run by Node: v1
(`@modelcontextprotocol/sdk`, the handshake era) and v2 (`@modelcontextprotocol/client`,
2026-07-28 under `versionNegotiation: auto`), installed by `npm ci` in tests/node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.mcp_processes import McpSetup, start_mcp_setup
from tests.support.processes import REPO

NODE_DIR = REPO / "tests" / "node"
PACKAGES = {"v1": "sdk", "v2": "client"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSetup]:
    started = start_mcp_setup(tmp_path_factory.mktemp("mcp"))
    yield started
    started.stop()


@pytest.mark.parametrize(("sdk", "era"), [("v1", "handshake"), ("v2", "modern")])
def test_the_typescript_sdk_lists_calls_and_is_refused(setup: McpSetup, sdk: str, era: str) -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed for this test (apt-get install nodejs)"
    package = NODE_DIR / "node_modules" / "@modelcontextprotocol" / PACKAGES[sdk]
    assert package.is_dir(), f"{package.name} is not installed: run `npm ci` in tests/node"
    env = {**os.environ, "LLMEU_MCP_URL": setup.url, "LLMEU_API_KEY": setup.key(),
           "MCP_SDK": sdk}  # fmt: skip
    done = subprocess.run(
        [node, "mcp.mjs"], cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["era"] == era
    assert {"crm__echo", "legacy__echo"} <= set(result["tools"])
    assert not [t for t in result["tools"] if t.startswith("search__")]
    assert result["echo"]["content"] == [{"type": "text", "text": "bonjour"}]
    assert result["echo"]["_meta"]["eu.llmeu/trace_id"].startswith("trc_")
    assert result["counted"]["content"][0]["text"] == "counted to 3"
    assert result["progress"] == [1, 2, 3]
    assert result["refused"]["code"] == -32602
    assert "Unknown tool: search__echo" in result["refused"]["message"]
    assert setup.servers["search"].stats()["requests"] == 0
