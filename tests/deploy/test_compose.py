"""deploy/compose.yaml: two gateway replicas behind a load balancer, PostgreSQL and Redis,
each with a health check, state in named volumes."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import yaml

from tests.deploy.manifests import DEPLOY, api_key_envs, catalog, serve_args


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def test_two_gateway_replicas_a_balancer_postgresql_and_redis() -> None:
    services = compose()["services"]
    assert set(services) == {"gateway", "balancer", "postgres", "redis"}
    assert services["gateway"]["deploy"]["replicas"] == 2
    assert list(services["balancer"]["ports"]) == ["127.0.0.1:8080:8080"]
    assert all("ports" not in s for name, s in services.items() if name != "balancer")


def test_every_service_has_a_health_check_and_waits_for_what_it_needs() -> None:
    services = compose()["services"]
    assert all(s["healthcheck"]["test"][0] == "CMD" for s in services.values())
    assert "/readyz" in " ".join(services["gateway"]["healthcheck"]["test"])
    needs = {name: s.get("depends_on", {}) for name, s in services.items()}
    assert needs["gateway"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert needs["balancer"] == {"gateway": {"condition": "service_healthy"}}


def test_state_lives_in_named_volumes() -> None:
    document = compose()
    named = set(document["volumes"])
    used = {
        volume.split(":")[0]
        for service in document["services"].values()
        for volume in service.get("volumes", [])
        if not volume.startswith(".")
    }
    assert used == named == {"postgres-data", "redis-data"}


def test_the_gateway_runs_as_the_image_user_on_a_read_only_root() -> None:
    gateway = compose()["services"]["gateway"]
    assert gateway["read_only"] is True
    assert gateway["user"] == "10001:10001"
    assert gateway["cap_drop"] == ["ALL"]
    assert {t.split(":")[0] for t in gateway["tmpfs"]} == {"/tmp", "/data"}
    args = serve_args(gateway["command"])
    assert (args.host, args.port) == ("0.0.0.0", 8080)
    assert f"{args.config}:ro" in [v.split(":", 1)[1] for v in gateway["volumes"]]


def test_the_gateways_share_the_ledger_and_limits_and_get_every_upstream_key() -> None:
    environment = compose()["x-gateway-environment"]
    assert environment["LLMEU_DATABASE_URL"].startswith("postgresql://")
    assert re.search(r"@postgres:5432/", environment["LLMEU_DATABASE_URL"])
    assert environment["LLMEU_REDIS_URL"] == "redis://redis:6379/0"
    assert api_key_envs(catalog()) <= set(environment)
    assert compose()["services"]["gateway"]["environment"] == environment


def test_the_balancer_passes_streams_on_unbuffered() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    for directive in ("proxy_buffering off;", "proxy_request_buffering off;",
                      "proxy_http_version 1.1;", "server gateway:8080"):  # fmt: skip
        assert directive in conf


def test_the_gateways_run_the_slim_image_for_a_catalog_of_upstreams() -> None:
    gateway = compose()["services"]["gateway"]
    assert gateway["build"] == {"context": "..", "dockerfile": "Containerfile", "target": "slim"}
    assert {e.kind.value for e in catalog().catalog.endpoints} == {"openai"}


def test_the_gateways_trust_the_balancer_and_no_one_else_to_name_the_client() -> None:
    services = compose()["services"]
    balancer = services["balancer"]["networks"]["default"]["ipv4_address"]
    subnet = compose()["networks"]["default"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(balancer) in ipaddress.ip_network(subnet)
    args = serve_args(services["gateway"]["command"])
    assert args.trusted_proxy == [f"{balancer}/32"]
    assert args.max_connections_per_client is None  # the cap per client applies again
    assert (
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;"
        in (DEPLOY / "nginx.conf").read_text()
    )
