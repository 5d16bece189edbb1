"""A real OpenID provider in a process: `tests/clients/node/oidc_provider.mjs`, which runs the
certified `oidc-provider` package from npm (`make install` puts it in node_modules)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import REPO, free_port
from tests.support.waiting import wait_for

NODE_DIR = REPO / "tests" / "clients" / "node"
CLIENT_ID = "llmeu-console"
CLIENT_SECRET = "console-secret"
ROLE_MAP = ("auditors=auditor", "operators=operator")
"""alice is in `auditors`, bob in `operators` and `staff`, carol in `staff` only."""


def require_provider() -> None:
    if shutil.which("node") and (NODE_DIR / "node_modules" / "oidc-provider").is_dir():
        return
    if os.environ.get("CI"):
        raise RuntimeError("the sign-in tests need node and `npm ci` in tests/clients/node")
    pytest.skip("no node, or oidc-provider not installed (cd tests/clients/node && npm ci)")


@dataclass
class Issuer:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@contextmanager
def oidc_issuer(tmp: Path, gateway_port: int) -> Iterator[Issuer]:
    """The provider, its one client redirecting to the gateway on `gateway_port`."""
    require_provider()
    port = free_port()
    gateway = f"http://127.0.0.1:{gateway_port}"
    log = tmp / f"oidc-provider-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["node", "oidc_provider.mjs", str(port), f"{gateway}/auth/callback",
             f"{gateway}/console"],
            cwd=NODE_DIR, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    issuer = Issuer(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_for(lambda: "ready" in log.read_text() or proc.poll() is not None, 30, "the provider")
        assert proc.poll() is None, log.read_text()
        yield issuer
    finally:
        proc.terminate()
        proc.wait(10)


def sso_args(issuer: Issuer, *extra: str) -> list[str]:
    """`llmeu serve` arguments that sign the console in with `issuer`."""
    role_map = [arg for pair in ROLE_MAP for arg in ("--oidc-role-map", pair)]
    return ["--oidc-issuer", issuer.url, "--oidc-client-id", CLIENT_ID,
            "--oidc-client-secret-env", "OIDC_SECRET", *role_map, *extra]  # fmt: skip
