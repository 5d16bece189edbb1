"""MCP tool servers as real processes (`tests/support/mcp_tool_server.py`), for the tests of
`/mcp` and of the gateway's MCP client; and their entries in a configuration file."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import REPO, Gateway, free_port, start_gateway


@dataclass
class ToolServerProcess:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_stats", timeout=5) as answer:
            stats: dict[str, Any] = json.loads(answer.read())
            return stats

    def reset(self) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/_reset", method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_tool_server(tmp: Path, *flags: str, name: str = "tools") -> ToolServerProcess:
    """The SDK's tool server on a free port; `flags`: `--json`, `--stateless`, `--legacy`,
    `--token T`."""
    port = free_port()
    log = tmp / f"tool-server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.mcp_tool_server", "--port", str(port),
             "--name", name, *flags],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = ToolServerProcess(port, proc, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the tool server exited:\n{log.read_text()}")
        try:
            server.stats()
            return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise TimeoutError(f"the tool server did not answer:\n{log.read_text()}")


def tool_server_entry(
    server_id: str,
    url: str,
    *,
    sovereignty_class: str = "eu_sovereign",
    country: str = "FR",
    provider: str = "acme",
    retention: str = "P0D",
    extra: Sequence[str] = (),
) -> str:
    """One entry of `mcp_servers:`."""
    lines = [
        f"  - server_id: {server_id}",
        f"    url: {url}",
        f"    provider: {provider}",
        f"    country: {country}",
        f"    sovereignty_class: {sovereignty_class}",
        f"    retention: {retention}",
        *(f"    {line}" for line in extra),
    ]
    return "\n".join(lines) + "\n"


POLICIES = """
  - policy_id: tools-mask
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    store_content: P1D
    personal_data:
      detectors: {iban: mask, email: mask}
  - policy_id: tools-block
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {iban: block, email: allow}
  - policy_id: tools-some
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    allow_mcp_servers: [crm, legacy]
    allow_tools: [crm__echo, crm__count_slowly, crm__sleep, legacy__*]
"""


@dataclass
class McpSetup:
    """A gateway in front of tool servers of the SDK (real processes): `crm` (both eras,
    streams), `legacy` (handshake era only, JSON answers), `faulty` (tight timeouts, for the
    faults), `search` (class global: no key of these tests' policies may reach it), and
    `down` (nothing listens)."""

    gateway: Gateway
    servers: dict[str, ToolServerProcess]

    @property
    def url(self) -> str:
        return f"{self.gateway.url}/mcp"

    def key(self, policy_id: str = "eu-strict", **fields: Any) -> str:
        """A new tenant key under `policy_id`, with `fields` (limits, tool patterns)."""
        request = urllib.request.Request(
            f"{self.gateway.base_url}/platform/keys",
            data=json.dumps({"name": policy_id, "policy_id": policy_id, **fields}).encode(),
            headers={"authorization": f"Bearer {self.gateway.admin_key}",
                     "content-type": "application/json"},
            method="POST",
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as answer:
            key: str = json.loads(answer.read())["key"]
            return key

    def platform(self, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.gateway.base_url}/platform/{path}",
            headers={"authorization": f"Bearer {self.gateway.admin_key}"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        self.gateway.kill()
        for server in self.servers.values():
            server.stop()


def start_mcp_setup(tmp: Path, *gateway_args: str, endpoints: str = "") -> McpSetup:
    """The tool servers and a gateway in front of them (and of `endpoints`, entries of
    `endpoints:` for a model the test also needs)."""
    servers: dict[str, ToolServerProcess] = {}
    try:
        for name, flags in (("crm", ()), ("legacy", ("--legacy", "--json")),
                            ("faulty", ()), ("search", ())):  # fmt: skip
            servers[name] = start_tool_server(tmp, *flags, name=name)
        entries = "".join([
            tool_server_entry("crm", servers["crm"].url),
            tool_server_entry("legacy", servers["legacy"].url, provider="ledgerco"),
            tool_server_entry("faulty", servers["faulty"].url, extra=(
                "timeouts: {connect: 5, first_token: 3, idle: 3, total: 4}",)),
            tool_server_entry("search", servers["search"].url, sovereignty_class="global",
                              country="US", provider="searchco", retention="P30D"),
            tool_server_entry("down", f"http://127.0.0.1:{free_port()}/mcp"),
        ])  # fmt: skip
        models = f"endpoints:\n{endpoints}" if endpoints else ""
        config = f"{models}mcp_servers:\n{entries}policies:{POLICIES}default_policy: eu-strict\n"
        gateway = start_gateway(tmp, config=config, args=gateway_args)
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    return McpSetup(gateway, servers)
