"""Two gateway processes sharing one PostgreSQL ledger: usage equals what the clients
counted, and a revocation or a policy change holds in both before the API answers."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.e2e.test_ledger_cancel import stream_and_hang_up
from tests.support.databases import fetch, postgres_database_sync
from tests.support.processes import FakeUpstream, Gateway, config_yaml, fake_endpoint
from tests.support.waiting import wait_for

pytestmark = pytest.mark.postgres


@pytest.fixture
def pair(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> Iterator[tuple[Gateway, Gateway]]:
    """Two processes started at the same moment on a new database (both migrate)."""
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    with postgres_database_sync() as url, ThreadPoolExecutor(2) as pool:
        started = [
            pool.submit(gateway_factory, config=config, args=["--database-url", url])
            for _ in range(2)
        ]
        a, b = (f.result() for f in started)
        yield a, b
        a.kill()
        b.kill()


def client(gateway: Gateway, token: str | None = None) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url,
        headers={"authorization": f"Bearer {token or gateway.admin_key}"},
        timeout=30,
    )


def create_key(gateway: Gateway, name: str, **spec: Any) -> dict[str, Any]:
    with client(gateway) as admin:
        response = admin.post("/v1/platform/keys", json={"name": name, **spec})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def chat(gateway: Gateway, token: str, content: str = "hi", **extra: Any) -> httpx.Response:
    with client(gateway, token) as c:
        return c.post("/v1/chat/completions", json={
            "model": "fake-model", "messages": [{"role": "user", "content": content}], **extra})  # fmt: skip


class Tally:
    """What the clients saw, per status and key, and the tokens of completed calls."""

    def __init__(self) -> None:
        self.status: Counter[str] = Counter()
        self.by_key: Counter[str] = Counter()
        self.input_tokens = 0
        self.output_tokens = 0
        self.cancelled: list[tuple[Gateway, str]] = []
        self._lock = threading.Lock()

    def add(self, status: str, key_id: str, usage: dict[str, int] | None = None) -> None:
        with self._lock:
            self.status[status] += 1
            self.by_key[key_id] += 1
            if usage is not None:
                self.input_tokens += usage["prompt_tokens"]
                self.output_tokens += usage["completion_tokens"]


def one_call(gateway: Gateway, token: str, key_id: str, kind: str, tally: Tally) -> None:
    n = random.randint(2, 8)
    if kind == "stream":
        body = {"model": "fake-model", "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": f"s [[chunks={n}]]"}]}  # fmt: skip
        with client(gateway, token) as c, c.stream("POST", "/v1/chat/completions", json=body) as r:
            frames = [json.loads(line[6:]) for line in r.iter_lines()
                      if line.startswith("data: {")]  # fmt: skip
        tally.add("completed", key_id, frames[-1]["usage"])
    elif kind == "complete":
        response = chat(gateway, token, f"c [[chunks={n}]]")
        assert response.status_code == 200
        tally.add("completed", key_id, response.json()["usage"])
    elif kind == "reject":
        response = chat(gateway, token, model="no-such-model")
        assert response.status_code == 404
        tally.add("rejected", key_id)
    elif kind == "fail":
        response = chat(gateway, token, "f [[fault=status_400]]")
        assert response.status_code == 400
        tally.add("failed", key_id)
    else:
        proxy = Gateway(gateway.port, gateway.proc, gateway.data_dir, gateway.log, token)
        trace_id, received = stream_and_hang_up(proxy, "x [[chunks=40;delay=100]]", frames=1)
        assert received
        tally.cancelled.append((gateway, trace_id))
        tally.add("cancelled", key_id)


def test_usage_of_two_processes_equals_the_client_side_count(pair: tuple[Gateway, Gateway]) -> None:
    a, b = pair
    keys = [create_key(a, "alice"), create_key(b, "bob")]
    kinds = ["stream"] * 24 + ["complete"] * 24 + ["reject"] * 6 + ["fail"] * 6 + ["cancel"] * 6
    random.Random(4).shuffle(kinds)
    tally = Tally()
    with ThreadPoolExecutor(8) as pool:
        futures = [
            pool.submit(one_call, (a, b)[i % 2], keys[i % 3 % 2]["key"], keys[i % 3 % 2]["id"],
                        kind, tally)
            for i, kind in enumerate(kinds)
        ]  # fmt: skip
        for future in futures:
            future.result()
    for gateway, trace_id in tally.cancelled:  # a hang-up is recorded after the client left
        path = f"/v1/platform/traces/{trace_id}"
        with client(gateway) as admin:
            wait_for(lambda a=admin, p=path: a.get(p).json()["status"] == "cancelled",  # type: ignore[misc]
                     what="the cancelled trace")  # fmt: skip
    for gateway in (a, b):
        with client(gateway) as admin:
            usage = admin.get("/v1/platform/usage?group_by=status").json()
            per_key = admin.get("/v1/platform/usage?group_by=key").json()
        totals = usage["totals"]
        assert totals["requests"] == len(kinds)
        assert {s: totals[s] for s in tally.status} == dict(tally.status)
        assert totals["interrupted"] == 0
        completed = next(r for r in usage["data"] if r["status"] == "completed")
        assert completed["input_tokens"] == tally.input_tokens
        assert completed["output_tokens"] == tally.output_tokens
        assert completed["estimated_requests"] == 0
        expected_cost = (tally.input_tokens * 1.0 + tally.output_tokens * 2.0) / 1e6
        assert completed["cost_eur"] == pytest.approx(expected_cost, rel=1e-9)
        assert {r["key"]: r["requests"] for r in per_key["data"]} == {
            k["id"]: tally.by_key[k["id"]] for k in keys
        }


def test_a_revocation_holds_in_the_other_process_on_its_next_call(
    pair: tuple[Gateway, Gateway],
) -> None:
    a, b = pair
    created = create_key(a, "carol")
    assert chat(b, created["key"]).status_code == 200  # b learns a key a created
    with client(a) as admin:
        revoked = admin.delete(f"/v1/platform/keys/{created['id']}")
    assert revoked.status_code == 200
    assert revoked.json()["propagation"] == {"instances": 2, "confirmed": 2}
    for gateway in (b, a):
        response = chat(gateway, created["key"])
        assert response.status_code == 401, response.text
        with client(gateway, created["key"]) as c:
            assert c.get("/v1/platform/usage").status_code == 401


def test_a_policy_change_holds_in_the_other_process_on_its_next_call(
    pair: tuple[Gateway, Gateway],
) -> None:
    a, b = pair
    policy = {"allow_classes": ["eu_sovereign"], "max_retention": "P0D"}
    with client(a) as admin:
        assert admin.put("/v1/platform/policies/tenant", json=policy).status_code == 200
    created = create_key(b, "dave", policy_id="tenant")  # b knows the policy a stored
    assert chat(b, created["key"]).status_code == 200
    with client(a) as admin:
        narrowed = {**policy, "allow_classes": ["on_premise"]}
        assert admin.put("/v1/platform/policies/tenant", json=narrowed).status_code == 200
    refused = chat(b, created["key"])
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "no_compliant_route"
    with client(b) as admin:
        assert admin.get("/v1/platform/policies/tenant").json()["allow_classes"] == ["on_premise"]


def test_text_postgres_cannot_store_does_not_stall_the_ledger(
    pair: tuple[Gateway, Gateway],
) -> None:
    """A NUL character (from any client) once made every later write fail and retry."""
    a, _ = pair
    with client(a) as admin:
        odd = admin.post("/v1/chat/completions", json={
            "model": "fake\u0000model", "messages": [{"role": "user", "content": "a\u0000b"}]})  # fmt: skip
        assert odd.status_code == 404
        trace = admin.get(f"/v1/platform/traces/{odd.headers['x-llmeu-trace-id']}").json()
        assert trace["request_model"] == "fake\ufffdmodel"
        assert chat(a, a.admin_key).status_code == 200
        health = admin.get("/healthz").json()
        assert health["ledger"] == "ok" and health["ledger_queue"] == 0
        assert admin.get("/v1/platform/usage").json()["totals"]["requests"] == 2


def test_a_process_stopped_cleanly_is_not_waited_for(pair: tuple[Gateway, Gateway]) -> None:
    a, b = pair
    created = create_key(a, "erin")
    assert b.stop() == 0  # SIGTERM: b drains and leaves the instances table
    with client(a) as admin:
        revoked = admin.delete(f"/v1/platform/keys/{created['id']}")
    assert revoked.json()["propagation"] == {"instances": 1, "confirmed": 1}
    assert chat(a, created["key"]).status_code == 401


def listeners(url: str) -> list[dict[str, object]]:
    return asyncio.run(fetch(url, "SELECT pid FROM pg_stat_activity "
                                  "WHERE datname = current_database() AND query ILIKE 'LISTEN%'"))  # fmt: skip


def test_a_lost_listener_is_covered_by_the_periodic_reload_and_comes_back(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> None:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    with postgres_database_sync() as url:
        a, b = (gateway_factory(config=config, args=["--database-url", url]) for _ in "ab")
        created, later = create_key(a, "frank"), create_key(a, "grace")
        assert chat(b, created["key"]).status_code == 200
        assert chat(b, later["key"]).status_code == 200
        assert len(listeners(url)) == 2
        asyncio.run(fetch(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND query ILIKE 'LISTEN%'"))  # fmt: skip
        with client(a) as admin:
            assert admin.delete(f"/v1/platform/keys/{created['id']}").status_code == 200
        wait_for(lambda: chat(b, created["key"]).status_code == 401, timeout=20,
                 what="b's periodic reload to apply the revocation")  # fmt: skip
        wait_for(lambda: len(listeners(url)) == 2, timeout=20, what="both listeners back")
        with client(a) as admin:
            revoked = admin.delete(f"/v1/platform/keys/{later['id']}")
        assert revoked.json()["propagation"] == {"instances": 2, "confirmed": 2}
        assert chat(b, later["key"]).status_code == 401
        a.kill()
        b.kill()
