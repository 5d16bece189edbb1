"""The official TypeScript SDK (`@anthropic-ai/sdk`, installed by `make install` with `npm ci`
from tests/node/package-lock.json) against a real `llmeu serve`, run by Node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable

from tests.support.processes import REPO, FakeUpstream, Gateway, config_yaml, fake_endpoint

NODE_DIR = REPO / "tests" / "node"


def test_the_typescript_sdk_creates_and_streams(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed for this test (apt-get install nodejs)"
    assert (NODE_DIR / "node_modules" / "@anthropic-ai" / "sdk").is_dir(), (
        "@anthropic-ai/sdk is not installed: run `make install` (npm ci in tests/node)"
    )
    gateway = gateway_factory(config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream)))
    env = {**os.environ, "LLMEU_BASE_URL": gateway.url, "LLMEU_API_KEY": gateway.admin_key}
    done = subprocess.run(
        [node, "messages.mjs"], cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    message = result["message"]
    assert message["type"] == "message" and message["id"].startswith("msg_")
    assert message["content"] == [{"type": "text", "text": "tok0 tok1 tok2 "}]
    assert message["llmeu"]["endpoint_id"] == "fakeprov-fr-a"
    assert result["deltas"] == ["tok0 ", "tok1 ", "tok2 ", "tok3 "]
    final = result["final"]
    assert final["content"][0]["text"] == "tok0 tok1 tok2 tok3 "
    assert final["stop_reason"] == "end_turn" and final["usage"]["output_tokens"] == 4
