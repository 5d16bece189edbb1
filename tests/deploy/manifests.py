"""What the deployment tests read: the files of deploy/ and the catalog they serve."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from llmeu.cli.main import build_parser
from llmeu.routing.config_file import GatewayConfig, parse_config
from tests.support.processes import REPO

DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
GATEWAY_LABELS = {"app.kubernetes.io/name": "llmeu", "app.kubernetes.io/component": "gateway"}


@dataclass(frozen=True)
class Manifest:
    path: Path
    doc: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.doc["kind"])

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.kind}"


def manifests() -> list[Manifest]:
    """Every Kubernetes object in deploy/kubernetes (the kustomization is not one)."""
    found = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [Manifest(path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def one(kind: str) -> dict[str, Any]:
    (doc,) = [m.doc for m in manifests() if m.kind == kind]
    return doc


def catalog() -> GatewayConfig:
    return parse_config((DEPLOY / "config.yaml").read_text())


def upstream_hosts(config: GatewayConfig) -> set[str]:
    return {urlsplit(e.base_url).hostname or "" for e in config.catalog.endpoints if e.base_url}


def api_key_envs(config: GatewayConfig) -> set[str]:
    return {e.api_key_env for e in config.catalog.endpoints if e.api_key_env}


def serve_args(argv: list[str]) -> Any:
    """`llmeu …` parsed by the real command line: an unknown flag fails the test."""
    assert argv[0] == "llmeu", shlex.join(argv)
    return build_parser().parse_args(argv[1:])
