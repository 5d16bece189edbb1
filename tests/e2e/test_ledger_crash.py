"""kill -9 under load: no answered call is lost, and the calls in flight are found at the
next start and marked `interrupted`."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

WORKERS = 6
HELD = 4


@dataclass
class Outcome:
    stream: bool
    trace_id: str | None  # known once the headers (stream) or the response arrived
    answered: bool  # the client saw `[DONE]` or a full response


def call(client: httpx.Client, stream: bool, content: str) -> Outcome:
    body = {"model": "fake-model", "stream": stream,
            "messages": [{"role": "user", "content": content}]}  # fmt: skip
    if not stream:
        try:
            response = client.post("/v1/chat/completions", json=body)
        except httpx.HTTPError:
            return Outcome(False, None, False)
        assert response.status_code == 200, response.text
        return Outcome(False, response.json()["llmeu"]["trace_id"], True)
    outcome = Outcome(True, None, False)
    try:
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            outcome.trace_id = response.headers["x-llmeu-trace-id"]
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    outcome.answered = True
    except httpx.HTTPError:
        pass
    return outcome


def test_sigkill_under_load_loses_no_answered_call(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    gateway = gateway_factory(config=config)
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    outcomes: list[Outcome] = []
    stopping = threading.Event()

    def worker(index: int) -> None:
        with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
            turn = 0
            while not stopping.is_set():
                stream = (index + turn) % 2 == 0
                directives = "[[chunks=10;delay=5]]" if stream else "[[chunks=5;delay=10]]"
                outcomes.append(call(client, stream, f"load {index}.{turn} {directives}"))
                turn += 1

    held: list[dict[str, Any]] = []

    def hold_stream() -> None:
        """A stream that cannot finish before the kill: its trace must end `interrupted`."""
        with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
            body = {"model": "fake-model", "stream": True,
                    "messages": [{"role": "user", "content": "held [[chunks=1000;delay=500]]"}]}  # fmt: skip
            try:
                with client.stream("POST", "/v1/chat/completions", json=body) as response:
                    entry = {"trace_id": response.headers["x-llmeu-trace-id"], "frames": 0}
                    held.append(entry)
                    for line in response.iter_lines():
                        if line.startswith("data: {"):
                            entry["frames"] += 1
                        assert line != "data: [DONE]"
            except httpx.HTTPError:
                pass

    with ThreadPoolExecutor(WORKERS + HELD) as pool:
        running = [pool.submit(worker, i) for i in range(WORKERS)]
        running += [pool.submit(hold_stream) for _ in range(HELD)]
        wait_for(lambda: sum(o.answered for o in outcomes) >= 60, what="60 answered calls")
        wait_for(lambda: len(held) == HELD and all(h["frames"] >= 2 for h in held),
                 what="the held streams to be under way")  # fmt: skip
        stopping.set()
        gateway.stop(signal.SIGKILL)
        for future in running:
            future.result()

    restarted = gateway_factory(config=config, data_dir=gateway.data_dir)

    def trace(trace_id: str) -> dict[str, Any]:
        response = httpx.get(f"{restarted.url}/v1/platform/traces/{trace_id}", headers=headers)
        assert response.status_code == 200, (trace_id, response.text)
        return response.json()  # type: ignore[no-any-return]

    answered = [o for o in outcomes if o.answered]
    cut = [o for o in outcomes if not o.answered and o.trace_id is not None]
    assert len(answered) >= 60
    assert {trace(o.trace_id)["status"] for o in answered if o.trace_id} == {"completed"}
    assert all(o.trace_id for o in answered)
    for entry in held:
        record = trace(entry["trace_id"])
        assert record["status"] == "interrupted"
        assert record["error"]["code"] == "gateway_interrupted"
    for outcome in cut:  # its finish may have been durable just before the kill
        assert trace(outcome.trace_id)["status"] in ("interrupted", "completed")  # type: ignore[arg-type]
    in_progress = httpx.get(
        f"{restarted.url}/v1/platform/traces?status=in_progress", headers=headers
    ).json()
    assert in_progress["data"] == []
    totals = httpx.get(f"{restarted.url}/v1/platform/usage", headers=headers).json()["totals"]
    assert totals["completed"] >= len(answered)
    assert totals["interrupted"] >= HELD
    assert totals["requests"] == totals["completed"] + totals["interrupted"]
    assert totals["requests"] <= len(outcomes) + HELD
    print(json.dumps({"answered": len(answered), "cut": len(cut), "totals": totals}))


def test_a_stream_cut_by_kill_9_records_the_tokens_it_delivered(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    """The stream's progress mark (about once a second) is what its `interrupted` trace
    records: the tokens the client received, estimated, and the endpoint that served."""
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    gateway = gateway_factory(config=config)
    headers = {"authorization": f"Bearer {gateway.admin_key}"}
    held: dict[str, Any] = {"frames": 0}

    def hold() -> None:
        body = {"model": "fake-model", "stream": True,
                "messages": [{"role": "user", "content": "held [[chunks=1000;delay=100]]"}]}  # fmt: skip
        try:
            with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body,
                              headers=headers, timeout=30) as response:  # fmt: skip
                held["trace_id"] = response.headers["x-llmeu-trace-id"]
                for line in response.iter_lines():
                    held["frames"] += line.startswith("data: {")
        except httpx.HTTPError:
            pass

    def marked() -> int | None:
        view = httpx.get(f"{gateway.url}/v1/platform/traces/{held['trace_id']}", headers=headers)
        return view.json()["usage"]["output_tokens"]  # type: ignore[no-any-return]

    holder = threading.Thread(target=hold)
    holder.start()
    wait_for(lambda: held["frames"] >= 3, what="deltas sent")
    wait_for(lambda: marked() is not None, what="a progress mark of the open stream")
    delivered = marked()
    gateway.stop(signal.SIGKILL)
    holder.join()

    restarted = gateway_factory(config=config, data_dir=gateway.data_dir)
    trace = httpx.get(f"{restarted.url}/v1/platform/traces/{held['trace_id']}", headers=headers)
    record = trace.json()
    assert record["status"] == "interrupted"
    assert record["usage"]["output_tokens"] is not None and record["usage"]["estimated"] is True
    assert delivered is not None and record["usage"]["output_tokens"] >= delivered
    assert record["routing"]["endpoint_id"] == "fakeprov-fr-a"
