"""The fake Anthropic upstream as a real process, and a gateway endpoint pointing at it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.processes import REPO, FakeUpstream, _wait_http, fake_endpoint, free_port

FAKE_ANTHROPIC_KEY = "sk-ant-fake-key-for-tests"


def start_fake_anthropic(tmp: Path, api_key: str = FAKE_ANTHROPIC_KEY) -> FakeUpstream:
    """`tests/support/fake_anthropic.py` on a free port; it refuses any other `x-api-key`."""
    port = free_port()
    command = [sys.executable, "-m", "tests.support.fake_anthropic",
               "--port", str(port), "--api-key", api_key]  # fmt: skip
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    upstream = FakeUpstream(port, proc)
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stats", proc, 15, None)
    except BaseException:
        upstream.stop()
        raise
    return upstream


def anthropic_endpoint(
    endpoint_id: str,
    upstream: FakeUpstream,
    *,
    aliases: tuple[str, ...] = ("claude-eu",),
    api_key_env: str = "FAKE_ANTHROPIC_KEY",
) -> str:
    """A `kind: anthropic` endpoint of a configuration file, reading its key from the env."""
    yaml = fake_endpoint(
        endpoint_id, upstream, model="claude-fake", aliases=aliases, api_key_env=api_key_env
    )
    return yaml.replace("    kind: openai\n", "    kind: anthropic\n")
