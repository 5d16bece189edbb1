"""`llmeu probe` against real servers: the project's fake upstream and llmeu itself pass every
check; `llama_cpp.server` shows the deviations it is known for, listed here, not hidden."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.probe.fake_messages import FAULTS as MESSAGES_FAULTS
from tests.probe.fake_messages import fake_messages
from tests.probe.fake_responses import FAULTS, fake_responses
from tests.support.client_llama_server import llama_server
from tests.support.processes import (
    ADMIN_KEY,
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
)


def probe(base_url: str, model: str, *extra: str, key: str | None = None) -> tuple[int, Any]:
    env = {**os.environ, "PROBE_KEY": key or ""}
    with_key = ["--api-key-env", "PROBE_KEY"] if key else []
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "probe", base_url, "--model", model,
         *with_key, "--yes", "--json", *extra],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {f"{c['group']}/{c['check']}": c["result"] for c in report["checks"]}


# Deltas 30 ms apart, as a model makes them: a hang-up after the first lands mid-answer.
PACED = "fake;delay=30;chunks=12"


def test_the_fake_upstream_passes_every_check(fake_upstream: FakeUpstream) -> None:
    status, report = probe(fake_upstream.base_url, PACED, key="sk-any")
    assert status == 0, report
    found = verdicts(report)
    assert "fail" not in found.values() and "warn" not in found.values(), found
    assert report["suggested_entry"]["capabilities"] == ["chat", "tools"]


def test_llmeu_passes_every_check_and_records_the_hang_up(
    gateway_factory: Any, fake_upstream: FakeUpstream
) -> None:
    gateway: Gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream, model=PACED))
    )
    status, report = probe(gateway.base_url, "fake-model", key=ADMIN_KEY)
    assert status == 0, report
    found = verdicts(report)
    assert "fail" not in found.values() and "warn" not in found.values(), found
    hang_up = next(c for c in report["checks"] if c["check"] == "hang-up")
    assert hang_up["detail"] == "the server recorded the call cancelled"


def test_a_broken_stream_fails_with_its_evidence(fake_upstream: FakeUpstream) -> None:
    status, report = probe(fake_upstream.base_url, "fake;fault=missing_done", key="sk-any")
    assert status == 1
    done = next(c for c in report["checks"] if c["check"] == "[DONE]")
    assert done["result"] == "fail" and done["detail"] == "missing" and done["evidence"]


def test_the_probe_asks_before_it_spends(fake_upstream: FakeUpstream) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "probe", fake_upstream.base_url, "--model", "x"],
        capture_output=True, text=True, cwd=REPO, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert "8 calls" in done.stderr and "--yes" in done.stderr
    assert fake_upstream.stats() == []


# What llama_cpp.server does differently, as the probe reports it.
LLAMA_DEVIATIONS = {
    "usage/include_usage": "warn",  # it sends no usage chunk: llmeu estimates the counts
    "content/tool calls": "warn",  # tool_choice "required" does not make the model call one
    "errors/invalid request": "fail",  # an unknown message role is a 500, not a 400
    "errors/unknown model": "fail",  # any model name is served by the one loaded model
}


@pytest.mark.local_model
def test_llama_cpp_server_shows_its_known_deviations(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python's server extras")
    with llama_server(tmp_path / "server.log") as base_url:
        _, report = probe(base_url, "smollm2")
    found = verdicts(report)
    deviations = {name: v for name, v in found.items() if v in ("warn", "fail")}
    assert deviations == LLAMA_DEVIATIONS, json.dumps(report, indent=1)


def test_llmeu_passes_every_responses_check_and_records_the_hang_up(
    gateway_factory: Any, fake_upstream: FakeUpstream
) -> None:
    gateway: Gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream, model=PACED))
    )
    status, report = probe(gateway.base_url, "fake-model", "--api", "responses", key=ADMIN_KEY)
    assert status == 0, report
    found = verdicts(report)
    assert "fail" not in found.values() and "warn" not in found.values(), found
    assert {"transport/terminal event", "framing/sequence_number", "content/event order",
            "content/tool calls", "usage/streamed"} <= set(found)  # fmt: skip
    hang_up = next(c for c in report["checks"] if c["check"] == "hang-up")
    assert hang_up["detail"] == "the server recorded the call cancelled"
    assert report["suggested_entry"]["capabilities"] == ["responses", "tools"]


@pytest.mark.parametrize("model", ["fake", "fake;chop=1"])
def test_a_faultless_responses_server_passes_every_check(model: str) -> None:
    with fake_responses() as fake:
        status, report = probe(fake.base_url, model, "--api", "responses")
    assert len(fake.seen) == 7 and set(fake.seen) == {"/v1/responses"}
    reads = next(c for c in report["checks"] if c["check"] == "reads")
    if "chop" in model:  # a write of two whole events is read as one at least
        assert " 0 held several" not in reads["detail"], reads
    assert status == 0, report
    assert set(verdicts(report).values()) == {"pass"}, verdicts(report)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_broken_responses_stream_fails_the_check_it_breaks(fault: str) -> None:
    with fake_responses() as fake:
        status, report = probe(fake.base_url, f"fake;fault={fault}", "--api", "responses")
    assert status == 1
    broken = next(c for c in report["checks"] if f"{c['group']}/{c['check']}" == FAULTS[fault])
    assert broken["result"] == "fail" and broken["evidence"], broken
    assert report["suggested_entry"]["capabilities"] == []


def test_the_responses_probe_asks_before_it_spends() -> None:
    with fake_responses() as fake:
        done = subprocess.run(
            [sys.executable, "-m", "llmeu.cli.main", "probe", fake.base_url, "--model", "x",
             "--api", "responses"],
            capture_output=True, text=True, cwd=REPO, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 2
    assert "7 calls" in done.stderr and "/responses" in done.stderr and "--yes" in done.stderr
    assert fake.seen == []


def test_llmeu_passes_every_messages_check_and_records_the_hang_up(
    gateway_factory: Any, fake_upstream: FakeUpstream
) -> None:
    gateway: Gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream, model=PACED))
    )
    status, report = probe(gateway.base_url, "fake-model", "--api", "messages", key=ADMIN_KEY)
    assert status == 0, report
    found = verdicts(report)
    assert "fail" not in found.values() and "warn" not in found.values(), found
    assert {"transport/message_stop", "framing/event names", "content/event order",
            "content/block indexes", "content/tool calls", "usage/streamed",
            "errors/unknown model", "metadata/message id"} <= set(found)  # fmt: skip
    hang_up = next(c for c in report["checks"] if c["check"] == "hang-up")
    assert hang_up["detail"] == "the server recorded the call cancelled"
    assert report["suggested_entry"]["kind"] == "anthropic"
    assert report["suggested_entry"]["capabilities"] == ["chat", "tools"]


@pytest.mark.parametrize("model", ["fake", "fake;chop=1"])
def test_a_faultless_messages_server_passes_every_check(model: str) -> None:
    with fake_messages() as fake:
        status, report = probe(fake.base_url, model, "--api", "messages", key="sk-ant-test")
    assert len(fake.seen) == 7
    assert set(fake.seen) == {("/v1/messages", "sk-ant-test", "2023-06-01")}
    reads = next(c for c in report["checks"] if c["check"] == "reads")
    if "chop" in model:  # events several to a read and split across reads, read alike
        assert " 0 held several" not in reads["detail"], reads
        assert " 0 ended inside" not in reads["detail"], reads
    assert status == 0, report
    assert set(verdicts(report).values()) == {"pass"}, verdicts(report)


@pytest.mark.parametrize("fault", sorted(MESSAGES_FAULTS))
def test_a_broken_messages_stream_fails_the_check_it_breaks(fault: str) -> None:
    with fake_messages() as fake:
        status, report = probe(fake.base_url, f"fake;fault={fault}", "--api", "messages")
    assert status == 1
    name = MESSAGES_FAULTS[fault]
    broken = next(c for c in report["checks"] if f"{c['group']}/{c['check']}" == name)
    assert broken["result"] == "fail" and broken["evidence"], broken
    assert report["suggested_entry"]["capabilities"] == []


def test_the_messages_probe_asks_before_it_spends() -> None:
    with fake_messages() as fake:
        done = subprocess.run(
            [sys.executable, "-m", "llmeu.cli.main", "probe", fake.base_url, "--model", "x",
             "--api", "messages"],
            capture_output=True, text=True, cwd=REPO, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 2
    assert "7 calls" in done.stderr and "/messages" in done.stderr and "--yes" in done.stderr
    assert fake.seen == []


def test_without_a_key_option_the_probe_reads_llmeu_api_key(
    gateway_factory: Any, fake_upstream: FakeUpstream
) -> None:
    """As `llmeu chat` does: the documented probe command needs no `--api-key-env`."""
    gateway: Gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream, model=PACED))
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "probe", gateway.base_url, "--model",
         "fake-model", "--yes", "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**env, "LLMEU_API_KEY": ADMIN_KEY},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "using the key in LLMEU_API_KEY" in done.stderr
    assert ADMIN_KEY not in done.stderr + done.stdout


def test_a_refused_key_fails_the_probe_and_suggests_no_entry(
    gateway_factory: Any, fake_upstream: FakeUpstream
) -> None:
    gateway: Gateway = gateway_factory(
        config=config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream, model=PACED))
    )
    status, report = probe(gateway.base_url, "fake-model", key="sk-llmeu-not-a-key")
    assert status == 1
    assert report["refused_key"].startswith("401")
    assert report["suggested_entry"] is None
    env = {**os.environ, "PROBE_KEY": "sk-llmeu-not-a-key"}
    done = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "probe", gateway.base_url, "--model",
         "fake-model", "--api-key-env", "PROBE_KEY", "--yes"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert "refused the key (401" in done.stderr and "--api-key-env" in done.stderr
    assert "Suggested catalog entry" not in done.stdout
