"""Replicas of a deployment (compose, Kubernetes): separate gateway processes sharing one
PostgreSQL ledger and no Redis. The reload route called on one of them reloads the others
before it answers, as deploy/ tells operators to do after a catalog change; an invalid
file changes nothing anywhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.databases import postgres_database_sync
from tests.support.processes import ADMIN_KEY, FakeUpstream, Gateway, config_yaml, fake_endpoint

pytestmark = pytest.mark.postgres


@pytest.fixture
def replicas(
    gateway_factory: Callable[..., Gateway], fake_upstream: FakeUpstream
) -> Iterator[tuple[Gateway, Gateway]]:
    config = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream))
    with postgres_database_sync() as url:
        first = gateway_factory(config=config, args=["--database-url", url])
        second = gateway_factory(config=config, args=["--database-url", url])
        yield first, second


def admin(gateway: Gateway) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    )


def models(gateway: Gateway) -> set[str]:
    with admin(gateway) as client:
        return {m["id"] for m in client.get("/v1/models").json()["data"]}


def config_file(gateway: Gateway, tmp_path: Path) -> Path:
    """The file each process was started with: the one mounted ConfigMap of every pod."""
    return tmp_path / f"config-{gateway.port}.yaml"


def test_the_reload_route_on_one_replica_reloads_the_other_before_it_answers(
    replicas: tuple[Gateway, Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    first, second = replicas
    extra = fake_endpoint("fakeprov-fr-b", fake_upstream, aliases=("added-model",))
    edited = config_yaml(fake_endpoint("fakeprov-fr-a", fake_upstream), extra)
    for gateway in replicas:
        config_file(gateway, tmp_path).write_text(edited)
    assert "added-model" not in models(second)  # an edited file alone changes nothing

    with admin(first) as client:
        reloaded = client.post("/v1/platform/reload")
    assert reloaded.status_code == 200, reloaded.text
    assert "added-model" in models(second)
    with admin(second) as client:
        answered = client.post("/v1/chat/completions", json={
            "model": "added-model", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    assert answered.status_code == 200
    assert answered.json()["llmeu"]["endpoint_id"] == "fakeprov-fr-b"


def test_an_invalid_file_changes_no_replica(
    replicas: tuple[Gateway, Gateway], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    first, second = replicas
    before = models(second)
    for gateway in replicas:
        path = config_file(gateway, tmp_path)
        path.write_text(path.read_text().replace("retention: P0D", "retention: forever"))
    with admin(first) as client:
        refused = client.post("/v1/platform/reload")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_configuration"
    assert models(second) == before == models(first)
    with admin(second) as client:
        answered = client.post("/v1/chat/completions", json={
            "model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    assert answered.status_code == 200
