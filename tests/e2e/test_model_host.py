"""The local models in their own process: a host that dies mid-stream ends only its own
calls, each with its error and its trace; the keeper restarts it and the next local call is
served; a host that faults at start is reported in one line; workers share one host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path

import httpx
import pytest

from tests.faults.helpers import api_get, chat, parse_sse, trace
from tests.support.processes import (
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    free_port,
)
from tests.support.streams import dechunk, open_stream, read_to_end, read_until
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(find_spec("llama_cpp") is None, reason="needs the `local` extra"),
]

LOCAL = """\
  - endpoint_id: local-chat
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [local]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
"""
STORY = {"model": "local", "stream": True, "max_tokens": 400, "temperature": 0,
         "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}]}  # fmt: skip
REMOTE_STREAM = "remote [[chunks=10;delay=40]]"
FAULT = {"LLMEU_MODEL_HOST_FAULT": "start"}


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _is_keeper(pid: int) -> bool:
    return b"llmeu.modelhost" in Path(f"/proc/{pid}/cmdline").read_bytes()


def host_pids(gateway: Gateway) -> list[int]:
    """The model hosts under the gateway: its keeper's children."""
    keepers = [c for c in _children(gateway.proc.pid) if _is_keeper(c)]
    return [host for keeper in keepers for host in _children(keeper)]


def keeper_pids(gateway: Gateway) -> list[int]:
    """The keepers under the gateway, whichever of its threads launched them."""
    tasks = Path(f"/proc/{gateway.proc.pid}/task").iterdir()
    children = [int(c) for task in tasks for c in (task / "children").read_text().split()]
    return [c for c in children if _is_keeper(c)]


def _workers(gateway: Gateway) -> list[int]:
    return [c for c in _children(gateway.proc.pid) if not _is_keeper(c)]


def _unavailable(gateway: Gateway) -> dict[str, str]:
    found: dict[str, str] = (
        httpx.get(f"{gateway.url}/readyz").json().get("unavailable_endpoints", {})
    )
    return found


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSEGV], ids=["sigkill", "sigsegv"])
def test_a_host_killed_mid_stream_ends_its_calls_alone_and_comes_back(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream, signum: int
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), LOCAL)
    gateway = gateway_factory(config=config, local_models=True, timeout=120)
    (host,) = wait_for(lambda: host_pids(gateway), what="the model host")
    with ThreadPoolExecutor(8) as pool:
        remote = [pool.submit(chat, gateway, REMOTE_STREAM, stream=True) for _ in range(8)]
        local = open_stream(gateway, "", body=STORY)
        head = read_until(local, b'"content"', 3)
        waiting = pool.submit(chat, gateway, "Hi", model="local", max_tokens=4)
        wait_for(lambda: fake_upstream.stats(), what="remote calls in flight")
        os.kill(host, signum)
        later = [pool.submit(chat, gateway, REMOTE_STREAM, stream=True) for _ in range(8)]
        body = head + read_to_end(local)
        local.close()
        for done in [*remote, *later]:
            outcome = done.result()
            assert outcome.status == 200 and outcome.done, "remote calls complete throughout"
        queued = waiting.result()
    _, _, raw = body.partition(b"\r\n\r\n")
    frames, done = parse_sse(dechunk(raw))
    assert not done, "a broken stream never ends with [DONE]"
    assert frames[-1]["error"]["code"] == "local_model_unavailable"
    trace_id = body.split(b"x-llmeu-trace-id: ")[1].split(b"\r\n")[0].decode()
    record = trace(gateway, trace_id)
    assert record["status"] == "failed"
    assert queued.status in (200, 503), "a call waiting for its turn: served or a clean 503"
    if queued.status == 503:
        assert queued.json["error"]["code"] == "local_model_unavailable"
        assert trace(gateway, queued.trace_id)["status"] == "failed"
    wait_for(lambda: not _unavailable(gateway) and host_pids(gateway) not in ([], [host]),
             timeout=60, what="the restarted host")  # fmt: skip
    again = chat(gateway, "Hi", model="local", max_tokens=4, temperature=0)
    assert again.status == 200, again.body
    metrics = api_get(gateway, "/metrics").text
    assert "llmeu_model_host_restarts_total 1.0" in metrics
    assert "llmeu_model_host_up 1.0" in metrics


def test_a_host_that_faults_at_start_leaves_the_remote_endpoints_serving(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), LOCAL)
    gateway = gateway_factory(config=config, local_models=True, env=FAULT, timeout=120)
    lines = [line for line in gateway.output().splitlines() if "rebuild it for this CPU" in line]
    assert len(lines) == 1 and "SIGSEGV" in lines[0] and "--no-binary llama-cpp-python" in lines[0]
    rows = api_get(gateway, "/v1/platform/endpoints").json()["data"]
    reason = next(r for r in rows if r["endpoint_id"] == "local-chat")["unavailable_reason"]
    assert "SIGSEGV" in reason
    assert chat(gateway, "remote").status == 200


def test_a_host_that_faults_at_start_stops_a_gateway_with_nothing_else(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(config_yaml(LOCAL))
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "serve", "--port", str(free_port()),
         "--data-dir", str(tmp_path), "--config", str(config)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **FAULT},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("rebuild it for this CPU") == 1, done.stderr


@pytest.mark.redis
def test_two_workers_share_one_host(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), LOCAL)
    gateway = gateway_factory(config=config, local_models=True, timeout=120,
                              args=["--workers", "2", "--redis-url", "redis://127.0.0.1:6379/0"])  # fmt: skip
    workers = wait_for(lambda: _workers(gateway) if len(_workers(gateway)) == 2 else None,
                       what="both workers")  # fmt: skip
    assert len(host_pids(gateway)) == 1, "one model host for the machine"
    for _ in range(6):  # new connections: both workers take some
        assert chat(gateway, "Hi", model="local", max_tokens=2).status == 200
    for worker in workers:
        maps = Path(f"/proc/{worker}/maps").read_text()
        assert "libllama" not in maps and "libggml" not in maps, "no worker loads the model"


def test_a_call_past_the_time_limit_fails_alone_under_the_memory_ceiling(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(config=config_yaml(LOCAL), local_models=True, timeout=120,
                              args=["--local-call-timeout", "0.3", "--local-memory-limit", "6G"])  # fmt: skip
    (host,) = wait_for(lambda: host_pids(gateway), what="the model host")
    limits = Path(f"/proc/{host}/limits").read_text()
    ceiling = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    assert ceiling.split()[3:5] == [str(6 << 30)] * 2
    long = chat(gateway, "Write a long story about Brussels.", stream=True, model="local",
                max_tokens=400, temperature=0)  # fmt: skip
    assert long.status == 200 and not long.done
    assert long.error_frame is not None
    assert long.error_frame["error"]["code"] == "local_call_timeout"
    assert trace(gateway, long.trace_id)["status"] == "failed"
    assert host_pids(gateway) == [host], "the host goes on"
    short = chat(gateway, "Hi", model="local", max_tokens=2)
    assert short.status == 200, short.body


def test_a_host_that_stops_answering_is_replaced_and_meanwhile_calls_fall_back(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    backup = fake_endpoint("fakeprov-fr-a", fake_upstream, aliases=("answer",), priority=200)
    config = config_yaml(LOCAL.replace("[local]", "[local, answer]"), backup)
    gateway = gateway_factory(config=config, local_models=True, timeout=120)
    assert chat(gateway, "Hi", model="answer", max_tokens=2).json["llmeu"]["endpoint_id"] == (
        "local-chat"
    )
    (host,) = wait_for(lambda: host_pids(gateway), what="the model host")
    os.kill(host, signal.SIGSTOP)  # alive, and silent
    reason = wait_for(lambda: _unavailable(gateway).get("local-chat"), timeout=20,
                      what="the endpoint shown down")  # fmt: skip
    assert reason
    refused = chat(gateway, "Hi", model="local", max_tokens=2)
    assert refused.status == 503, refused.body
    assert refused.json["error"]["code"] == "local_model_unavailable"
    assert trace(gateway, refused.trace_id)["status"] == "failed"
    fallen_back = chat(gateway, "Hi", model="answer", max_tokens=2)
    assert fallen_back.status == 200, fallen_back.body
    assert fallen_back.json["llmeu"]["endpoint_id"] == "fakeprov-fr-a", "inside the policy"
    wait_for(lambda: not _unavailable(gateway) and host_pids(gateway) not in ([], [host]),
             timeout=60, what="a new host")  # fmt: skip
    assert chat(gateway, "Hi", model="local", max_tokens=2).status == 200


def test_keeper_and_host_end_with_a_gateway_killed_outright(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(config=config_yaml(LOCAL), local_models=True, timeout=120)
    (host,) = wait_for(lambda: host_pids(gateway), what="the model host")
    (keeper,) = [c for c in _children(gateway.proc.pid) if _is_keeper(c)]
    gateway.kill()
    wait_for(lambda: not Path(f"/proc/{keeper}").exists() and not Path(f"/proc/{host}").exists(),
             timeout=20, what="keeper and host gone")  # fmt: skip


@pytest.mark.parametrize("workers", [1, 2], ids=["one-process", "two-workers"])
def test_a_killed_keeper_is_launched_again_and_its_host_serves(
    gateway_factory: Callable[..., Gateway], workers: int
) -> None:
    args = ["--workers", "2", "--redis-url", "redis://127.0.0.1:6379/0"] if workers > 1 else []
    gateway = gateway_factory(config=config_yaml(LOCAL), local_models=True, timeout=120,
                              args=args)  # fmt: skip
    (keeper,) = wait_for(lambda: keeper_pids(gateway), what="the keeper")
    (host,) = wait_for(lambda: _children(keeper), what="the model host")
    local = open_stream(gateway, "", body=STORY)
    head = read_until(local, b'"content"', 3)
    os.kill(keeper, signal.SIGKILL)
    os.kill(host, signal.SIGKILL)
    # The error frame, read as it comes (the kept-alive connection closes only seconds later).
    body = head + read_until(local, b"local_model_unavailable")
    if workers == 1:  # (with two, /readyz may be answered by the other worker, not yet aware)
        assert _unavailable(gateway).get("local-chat"), "the outage shows in /readyz"
    body += read_to_end(local)
    local.close()
    frames, done = parse_sse(dechunk(body.partition(b"\r\n\r\n")[2]))
    assert not done and frames[-1]["error"]["code"] == "local_model_unavailable"
    (again,) = wait_for(lambda: [k for k in keeper_pids(gateway) if k != keeper and _children(k)],
                        timeout=60, what="a new keeper and its host")  # fmt: skip
    wait_for(lambda: not _unavailable(gateway), timeout=30, what="the endpoint back")
    for _ in range(2 * workers):  # new connections: with two workers, both take some
        answer = chat(gateway, "Hi", model="local", max_tokens=2)
        assert answer.status == 200, answer.body
    assert keeper_pids(gateway) == [again], "still one keeper for the machine"
    assert f"keeper (pid {keeper})" in gateway.output()
    assert "the local model host is running again" in gateway.output()
    if workers == 1:
        assert f"keeper (pid {keeper}) was killed by signal SIGKILL" in gateway.output()
        assert "llmeu_model_host_restarts_total 1.0" in api_get(gateway, "/metrics").text
