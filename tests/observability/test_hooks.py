"""An observer's bug is logged and never fails the call it observes."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmeu.observability.hooks import CallObserver
from tests.observability.harness import AUTH, in_process
from tests.support.processes import FakeUpstream, config_yaml, fake_endpoint

HOOKS = (
    "call_started",
    "attempt_started",
    "attempt_finished",
    "response_started",
    "first_token",
    "call_finished",
)


def _broken(*args: object) -> None:
    raise RuntimeError("broken")


class Broken(CallObserver):
    """Raises in every hook."""

    call_started = attempt_started = attempt_finished = staticmethod(_broken)
    response_started = first_token = call_finished = staticmethod(_broken)


async def test_a_failing_observer_does_not_fail_the_call(
    tmp_path: Path, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    async with in_process(tmp_path, config) as gw:
        gw.app.gateway.observers.add(Broken())
        response = await gw.chat("hello", stream=True)
        trace_id = response.headers["x-llmeu-trace-id"]
        trace = await gw.client.get(f"/v1/platform/traces/{trace_id}", headers=AUTH)
    assert response.status_code == 200
    assert response.text.endswith("data: [DONE]\n\n")
    assert trace.json()["status"] == "completed"
    failed = {
        r.getMessage().split(" failed in ")[-1]
        for r in caplog.records
        if "broken" in str(r.exc_info)
    }
    assert failed == set(HOOKS)
