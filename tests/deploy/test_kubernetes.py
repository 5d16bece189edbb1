"""deploy/kubernetes: every object loads into the official client's typed models, and the
objects agree with each other, with the image and with the catalog they serve."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from tests.deploy.manifests import (
    GATEWAY_LABELS,
    KUBERNETES,
    Manifest,
    api_key_envs,
    catalog,
    manifests,
    one,
    serve_args,
    upstream_hosts,
)

# The typed model of each built-in kind; the others are custom resources.
MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "V2HorizontalPodAutoscaler",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}
CUSTOM = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("cilium.io/v2", "CiliumNetworkPolicy"),
}
BUILT_IN = [m for m in manifests() if (m.doc["apiVersion"], m.kind) in MODELS]


def typed_round_trip(doc: dict[str, Any]) -> dict[str, Any]:
    """Through the client's model and back: a misspelt or misplaced field is dropped on the
    way, a missing required one or a wrong type raises."""
    client = ApiClient()
    model = client._ApiClient__deserialize(doc, MODELS[doc["apiVersion"], doc["kind"]])  # type: ignore[attr-defined]
    back: dict[str, Any] = client.sanitize_for_serialization(model)
    return back


def test_every_object_is_a_kind_we_know() -> None:
    kinds = {(m.doc["apiVersion"], m.kind) for m in manifests()}
    assert kinds == set(MODELS) | CUSTOM


@pytest.mark.parametrize("manifest", BUILT_IN, ids=[m.id for m in BUILT_IN])
def test_loads_into_the_typed_model_without_losing_a_field(manifest: Manifest) -> None:
    assert typed_round_trip(manifest.doc) == manifest.doc


def test_a_misspelt_field_is_caught() -> None:
    deployment = one("Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessprobe"] = container.pop("readinessProbe")
    assert typed_round_trip(deployment) != deployment


def gateway_container() -> dict[str, Any]:
    containers = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]  # type: ignore[no-any-return]


def test_probes_are_on_readyz_and_healthz() -> None:
    container = gateway_container()
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]


def test_the_gateway_runs_non_root_on_a_read_only_root_with_limits() -> None:
    pod = one("Deployment")["spec"]["template"]["spec"]
    container = gateway_container()
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["runAsNonRoot"] is True and context["runAsUser"] == 10001  # the image's
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert set(container["resources"]) == {"requests", "limits"}
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/tmp", "/data"}


def test_the_arguments_are_the_gateways_own() -> None:
    args = serve_args(gateway_container()["args"])
    assert (args.host, args.port) == ("0.0.0.0", 8080)
    assert args.no_local  # the slim image has no local models
    mounted = {m["name"]: m["mountPath"] for m in gateway_container()["volumeMounts"]}
    assert args.config.parent.as_posix() == mounted["config"]
    # The pod stops within its grace period even when the drain takes all of its time.
    pod = one("Deployment")["spec"]["template"]["spec"]
    assert args.shutdown_grace + 5 < pod["terminationGracePeriodSeconds"]


def test_keys_come_from_secrets_for_the_ledger_limits_admin_and_every_upstream() -> None:
    env = {e["name"]: e for e in gateway_container()["env"]}
    for name in ("LLMEU_DATABASE_URL", "LLMEU_REDIS_URL", "LLMEU_ADMIN_KEY"):
        assert "secretKeyRef" in env[name]["valueFrom"], name
    for name in api_key_envs(catalog()):
        assert env[name]["valueFrom"]["secretKeyRef"]["optional"] is True, name
    assert all("value" not in e for e in env.values())  # no secret in the manifest


def test_every_replica_signs_with_the_keys_of_one_secret() -> None:
    args = serve_args(gateway_container()["args"])
    mounts = {m["name"]: m for m in gateway_container()["volumeMounts"]}
    volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert args.signing_key_file is None
    assert args.signing_key_dir.as_posix() == mounts["signing-keys"]["mountPath"]
    assert mounts["signing-keys"]["readOnly"] is True
    secret = volumes["signing-keys"]["secret"]
    assert secret["secretName"] == "llmeu-signing-keys"
    assert secret["defaultMode"] & 0o077 == 0  # a key file others may read is refused
    env = {e["name"] for e in gateway_container()["env"]}
    assert not env & {"LLMEU_SIGNING_KEY", "LLMEU_SIGNING_KEY_FILE"}  # one source of keys


def test_selectors_find_the_gateway_pods() -> None:
    deployment = one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == GATEWAY_LABELS == pod_labels
    selectors = {
        "Service": one("Service")["spec"]["selector"],
        "PodDisruptionBudget": one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        "NetworkPolicy": one("NetworkPolicy")["spec"]["podSelector"]["matchLabels"],
        "ServiceMonitor": one("ServiceMonitor")["spec"]["selector"]["matchLabels"],
        "Cilium": one("CiliumNetworkPolicy")["spec"]["endpointSelector"]["matchLabels"],
    }
    assert selectors == dict.fromkeys(selectors, GATEWAY_LABELS)
    target = one("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert one("HorizontalPodAutoscaler")["spec"]["minReplicas"] >= 2
    assert one("PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert one("ServiceMonitor")["spec"]["endpoints"][0]["path"] == "/metrics"


def test_the_configmap_is_the_catalog_of_deploy_and_valid() -> None:
    text = one("ConfigMap")["data"]["config.yaml"]
    assert text == (KUBERNETES.parent / "config.yaml").read_text()
    assert upstream_hosts(catalog())  # parse_config accepted it, and it names upstreams


def ports(rule: dict[str, Any]) -> set[tuple[int, str]]:
    return {(p["port"], p["protocol"]) for p in rule["ports"]}


def test_the_network_policy_lets_out_only_dns_postgresql_and_redis() -> None:
    spec = one("NetworkPolicy")["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    egress = spec["egress"]
    assert all(rule.get("to") for rule in egress)  # no rule open to every destination
    assert all("ipBlock" not in peer for rule in egress for peer in rule["to"])
    assert [ports(rule) for rule in egress] == [
        {(53, "UDP"), (53, "TCP")},
        {(5432, "TCP")},
        {(6379, "TCP")},
    ]
    assert [ports(rule) for rule in spec["ingress"]] == [{(8080, "TCP")}]


def test_upstream_egress_names_exactly_the_catalogs_hosts_on_https() -> None:
    hosts = upstream_hosts(catalog())
    assert all(e.base_url.startswith("https://") for e in catalog().catalog.endpoints)
    dns, https = one("CiliumNetworkPolicy")["spec"]["egress"]
    assert {n["matchName"] for n in https["toFQDNs"]} == hosts
    assert https["toPorts"] == [{"ports": [{"port": "443", "protocol": "TCP"}]}]
    assert {n["matchName"] for n in dns["toPorts"][0]["rules"]["dns"]} == hosts


def test_the_kustomization_lists_every_built_in_object_file() -> None:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    files = {m.path.name for m in BUILT_IN}
    assert set(kustomization["resources"]) == files
    image = gateway_container()["image"].rsplit(":", 1)[0]
    assert [i["name"] for i in kustomization["images"]] == [image]


def test_an_init_container_migrates_the_ledger_before_the_gateway_refuses_to() -> None:
    """`llmeu migrate` with the gateway's image, its database and its confinement; the
    gateway itself then leaves the schema alone (`--no-migrate`)."""
    pod = one("Deployment")["spec"]["template"]["spec"]
    (migrate,) = pod["initContainers"]
    gateway = gateway_container()
    assert serve_args(migrate["args"]).command == "migrate"
    assert migrate["image"] == gateway["image"]
    env = {e["name"]: e["valueFrom"] for e in migrate["env"]}
    assert env == {"LLMEU_DATABASE_URL": {"secretKeyRef": {"name": "llmeu", "key": "database-url"}}}
    assert env["LLMEU_DATABASE_URL"] in [e.get("valueFrom") for e in gateway["env"]]
    assert migrate["securityContext"] == gateway["securityContext"]
    assert set(migrate["resources"]) == {"requests", "limits"}
    assert serve_args(gateway["args"]).no_migrate
