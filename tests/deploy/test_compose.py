"""deploy/compose.yaml: two gateway replicas behind a load balancer, PostgreSQL and Redis,
each with a health check, state in named volumes; one signing key directory for every
replica, whose first key a one-shot service writes once."""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.manifests import DEPLOY, api_key_envs, catalog, serve_args


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def test_two_gateway_replicas_a_balancer_postgresql_and_redis() -> None:
    services = compose()["services"]
    assert set(services) == {"gateway", "balancer", "postgres", "redis", "signing-keys"}
    assert services["gateway"]["deploy"]["replicas"] == 2
    assert list(services["balancer"]["ports"]) == ["127.0.0.1:8080:8080"]
    assert all("ports" not in s for name, s in services.items() if name != "balancer")


def test_every_service_has_a_health_check_and_waits_for_what_it_needs() -> None:
    services = compose()["services"]
    lasting = {name: s for name, s in services.items() if s["restart"] != "no"}
    assert set(services) - set(lasting) == {"signing-keys"}, "one service runs once"
    assert all(s["healthcheck"]["test"][0] == "CMD" for s in lasting.values())
    assert "/readyz" in " ".join(services["gateway"]["healthcheck"]["test"])
    needs = {name: s.get("depends_on", {}) for name, s in services.items()}
    assert needs["gateway"] == {
        "signing-keys": {"condition": "service_completed_successfully"},
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
    assert used == named == {"postgres-data", "redis-data", "signing-keys"}


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


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Named volume → where the service mounts it (with its options)."""
    return dict(v.split(":", 1) for v in service["volumes"] if not v.startswith("."))


def test_the_replicas_share_one_signing_key_directory_read_only() -> None:
    services = compose()["services"]
    gateway, first_key = services["gateway"], services["signing-keys"]
    directory = serve_args(gateway["command"]).signing_key_dir
    assert _mounts(gateway)["signing-keys"] == f"{directory}:ro"
    assert _mounts(first_key)["signing-keys"] == "/data", "the image's /data: its user owns it"
    assert first_key["image"] == gateway["image"] and first_key["user"] == gateway["user"]
    assert first_key["read_only"] is True and first_key["cap_drop"] == ["ALL"]


def test_the_first_key_is_written_once_and_kept(tmp_path: Path) -> None:
    """The one-shot service's command, run twice on an empty directory as compose runs it
    (`$$` is a `$` once compose has read the file), with the key directory in place of
    its mount."""
    service = compose()["services"]["signing-keys"]
    shell, flag, script = service["command"]
    assert (shell, flag) == ("sh", "-c")
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    script = script.replace("$$", "$").replace("/data", str(keys))
    environment = {**os.environ, **service["environment"], "LLMEU_DATA_DIR": str(tmp_path),
                   "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip
    runs = [subprocess.run([shell, flag, script], env=environment, capture_output=True,
                           text=True, timeout=60, check=False) for _ in range(2)]  # fmt: skip
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert "new signing key" in runs[0].stdout and runs[1].stdout == "", "the second keeps it"
    (key,) = keys.glob("*.pem")
    assert key.stat().st_mode & 0o777 == 0o600
