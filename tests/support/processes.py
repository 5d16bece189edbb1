"""Real processes for end-to-end tests: the fake upstream and `llmeu serve`.

Every process is started on a free port of 127.0.0.1 and stopped (and waited
for) by the fixture that started it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ADMIN_KEY = "sk-llmeu-admin-test-admin-key"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(
    url: str,
    proc: subprocess.Popen[bytes],
    timeout: float,
    log: Path | None,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Until `url` answers 200 (or `ready()` says so, for a server plain HTTP cannot ask)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = log.read_text() if log and log.exists() else ""
            raise RuntimeError(
                f"process exited with {proc.returncode} before it answered:\n{output}"
            )
        try:
            if ready is not None:
                if ready():
                    return
            else:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@dataclass
class FakeUpstream:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{self.port}/_stats"
        with urllib.request.urlopen(url, timeout=5) as response:
            requests: list[dict[str, Any]] = json.loads(response.read())["requests"]
            return requests

    def reset(self) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/_reset", method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_fake_upstream(tmp: Path, script: str = "fake_upstream.py") -> FakeUpstream:
    """A fake upstream process: `script` in tests/support (`fake_responses_upstream.py`
    speaks the Responses API), run as a module of the repository like every fake."""
    port = free_port()
    module = "tests.support." + script.removesuffix(".py")
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    upstream = FakeUpstream(port, proc)
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stats", proc, 15, None)
    except BaseException:
        upstream.stop()
        raise
    return upstream


@dataclass
class Gateway:
    port: int
    proc: subprocess.Popen[bytes]
    data_dir: Path
    log: Path
    admin_key: str = ADMIN_KEY
    args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def new_key(self, name: str, policy_id: str) -> str:
        """A new API key of the policy, made with the admin key."""
        request = urllib.request.Request(
            f"{self.base_url}/platform/keys",
            data=json.dumps({"name": name, "policy_id": policy_id}).encode(),
            headers={"authorization": f"Bearer {self.admin_key}",
                     "content-type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201, response.read()
            key: str = json.loads(response.read())["key"]
        return key


def start_gateway(
    tmp: Path,
    *,
    config: str | None = None,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    local_models: bool = False,
    data_dir: Path | None = None,
    port: int | None = None,
    timeout: float = 60,
    nofile: int | None = None,
    ready: Callable[[int], bool] | None = None,
    python: str = sys.executable,
    code: Path = REPO,
) -> Gateway:
    """`llmeu serve` as a real process; `config` is the YAML text of docs/design.md §4; `nofile`
    lowers its descriptor limit; `ready(port)` tells it answers, where a plain GET cannot
    (as with `--proxy-protocol`). `python` and `code`: another interpreter and another tree of
    llmeu (a previous release, tests/support/releases.py)."""
    port = port or free_port()
    data_dir = data_dir or tmp / f"data-{port}"
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [python, "-m", "llmeu.cli.main", "serve", "--port", str(port),
               "--data-dir", str(data_dir), "--log-level", "warning", *args]  # fmt: skip
    if config is not None:
        config_path = tmp / f"config-{port}.yaml"
        config_path.write_text(config)
        command += ["--config", str(config_path)]
    if not local_models:
        command.append("--no-local")
    log = tmp / f"gateway-{port}.log"
    environment = {**os.environ, "LLMEU_ADMIN_KEY": ADMIN_KEY, **(env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=environment, cwd=code,
            preexec_fn=None if nofile is None else partial(_limit_descriptors, nofile),
        )  # fmt: skip
    gateway = Gateway(port, proc, data_dir, log, args=list(args))
    try:
        probe = None if ready is None else partial(ready, port)
        _wait_http(f"{gateway.url}/healthz", proc, timeout, log, probe)
    except BaseException:
        gateway.kill()
        raise
    return gateway


def _limit_descriptors(nofile: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


def fake_endpoint(
    endpoint_id: str,
    upstream: FakeUpstream,
    *,
    model: str = "fake",
    aliases: Sequence[str] = ("fake-model",),
    sovereignty_class: str = "eu_sovereign",
    country: str = "FR",
    provider: str | None = None,
    priority: int = 10,
    retention: str = "P0D",
    capabilities: Sequence[str] = ("chat", "tools", "embeddings"),
    timeouts: dict[str, float] | None = None,
    api_key_env: str | None = None,
) -> str:
    """One endpoint of a configuration file, pointing at a fake upstream."""
    lines = [
        f"  - endpoint_id: {endpoint_id}",
        f"    provider: {provider or endpoint_id.split('-')[0]}",
        "    kind: openai",
        f"    base_url: {upstream.base_url}",
        f'    model: "{model}"',
        '    model_version: "1"',
        f"    aliases: [{', '.join(aliases)}]",
        "    inference_region: test-1",
        f"    country: {country}",
        f"    sovereignty_class: {sovereignty_class}",
        f"    retention: {retention}",
        "    price_eur_per_mtok: {input: 1.0, output: 2.0}",
        f"    priority: {priority}",
        f"    capabilities: [{', '.join(capabilities)}]",
    ]
    if api_key_env:
        lines.append(f"    api_key_env: {api_key_env}")
    if timeouts:
        lines.append("    timeouts: {" + ", ".join(f"{k}: {v}" for k, v in timeouts.items()) + "}")
    return "\n".join(lines) + "\n"


STORE_POLICY = """
  - policy_id: eu-store
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
"""


def config_yaml(
    *endpoints: str, policies: str = STORE_POLICY, default_policy: str = "eu-strict"
) -> str:
    return (
        "endpoints:\n"
        + "".join(endpoints)
        + "policies:"
        + policies
        + f"default_policy: {default_policy}\n"
    )
