"""The MCP tool servers in `llmeu routes`: the chosen policy's decision, and every policy
that admits each server.

A server is `admitted` or `excluded by <rule>` exactly as `/mcp` decides it
(`Policy.exclusion`, the same predicate table as for endpoints), or `skipped`
while a credential variable it needs is unset. `admitted by` lists the
configured policies (built-in ones included) under which a key could reach it.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich import box
from rich.table import Table
from rich.text import Text

from llmeu.routing.policy import Policy
from llmeu.routing.tool_servers import ToolCatalog, ToolServer


def tool_server_table(
    catalog: ToolCatalog,
    policy: Policy,
    policies: Mapping[str, Policy],
    unavailable: Mapping[str, str],
) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title="MCP tool servers")
    for name in ("server", "decision", "class", "country", "law", "retention", "url",
                 "admitted by"):  # fmt: skip
        table.add_column(name)
    for server in catalog.servers:
        admitting = [p.policy_id for p in policies.values() if p.admits(server)]
        table.add_row(
            Text(server.server_id),
            _decision(server, policy, unavailable),
            Text(server.sovereignty_class.value),
            Text(server.country),
            Text(_assurance(server)),
            Text(server.retention.text),
            Text(server.url),
            Text(", ".join(admitting) or "none"),
        )
    return table


def _decision(server: ToolServer, policy: Policy, unavailable: Mapping[str, str]) -> Text:
    why = unavailable.get(server.server_id)
    if why is not None:
        return Text(f"skipped: {why}", style="yellow")
    excluded = policy.exclusion(server)
    if excluded is None:
        return Text("admitted", style="green")
    return Text(f"excluded by {excluded[0]}", style="red")


def _assurance(server: ToolServer) -> str:
    parts = [server.jurisdiction or "?"]
    if server.seal is not None:
        parts.append(f"SEAL-{server.seal}")
    parts.extend(sorted(c.value for c in server.certifications))
    return " ".join(parts)
