"""`llmeu routes`: every endpoint and MCP tool server, and whether a policy admits it and why
— offline.

Reads the configuration (the built-in catalog without `--config`) and the
environment (through `Settings`, for the API-key variables), contacts no
upstream, and prints a table: `admitted`, `excluded` by a policy rule, or
`skipped` because the endpoint cannot be called (its API-key variable is
unset). `--allow-classes/--allow-countries/--allow-providers` narrow the
policy exactly as a request's `llmeu` field would, and are refused the same
way when they would widen it. With `--model`, only the endpoints serving that
model are listed, numbered in the order the router would try them. The table
shows what a routing question needs (endpoint, decision, class, region,
retention, prices), fitted to the terminal; `--wide` adds the provider's law
and assurance, the upstream kind, the default answer length and the models
each endpoint serves. Without `--model`, the MCP tool servers of the configuration
follow in a table of their own, with the policies that admit each
(`llmeu.cli.tool_server_report`).

Exit status: 0; 1 when `--model` is given and no endpoint may serve it; 2 for
an invalid configuration, an unknown policy or model, or a widening.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from llmeu.cli.tool_server_report import tool_server_table
from llmeu.config import Settings
from llmeu.errors import ApiError, ConfigError
from llmeu.personal.rules import describe_rules
from llmeu.providers.table import missing_credentials
from llmeu.routing.catalog import Endpoint, EndpointKind
from llmeu.routing.config_file import GatewayConfig
from llmeu.routing.load import load_config
from llmeu.routing.policy import Narrowing, Policy, narrow
from llmeu.routing.predicates import RULES, RULES_BY_NAME, Rule
from llmeu.routing.router import Exclusion, assess, try_order
from llmeu.routing.tool_servers import missing_tool_credentials


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "routes",
        help="show which endpoints a policy admits, and why (offline)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--config", type=Path, help="catalog and policies (default: built-in)")
    parser.add_argument("--policy", help="the policy to apply (default: the default policy)")
    parser.add_argument("--model", help="only the endpoints serving this model, in try order")
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every column: also the law, the upstream kind, the default answer length",
    )
    for field in ("classes", "countries", "providers"):
        parser.add_argument(
            f"--allow-{field}",
            type=_comma_list,
            default=(),
            metavar="A,B",
            help=f"narrow the policy to these {field}, as a request may",
        )
    parser.set_defaults(func=run)


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env(config_file=args.config)
    try:
        config = load_config(
            settings.config_file, host=socket.gethostname(), local_country=settings.local_country
        )
        policy = _policy(args, config)
    except ConfigError as error:
        print(f"llmeu routes: {error}", file=sys.stderr)
        return 2
    except ApiError as error:  # a narrowing that widens, or names an unknown class
        print(f"llmeu routes: {error.message.replace('`cli.allow_', '`--allow-')}", file=sys.stderr)
        return 2
    endpoints = config.catalog.endpoints
    if args.model is not None:
        endpoints = tuple(config.catalog.serving(args.model))
        if not endpoints:
            known = ", ".join(config.catalog.aliases())
            print(
                f"llmeu routes: no endpoint serves `{args.model}` (models: {known})",
                file=sys.stderr,
            )
            return 2
    unavailable = missing_credentials(config.catalog, settings.environ)
    verdicts = {e.endpoint_id: assess(e, policy, unavailable) for e in endpoints}
    admitted = sorted(
        (e for e in endpoints if verdicts[e.endpoint_id] is None), key=lambda e: try_order(e, {})
    )
    lines: list[RenderableType] = [
        Text(describe(policy)),
        Text(),
        _table(endpoints, verdicts, admitted if args.model else None, wide=args.wide),
        Text(),
        Text(_summary(verdicts)),
    ]
    if args.model is None and config.tool_servers:
        missing = missing_tool_credentials(config.tool_servers, settings.environ)
        lines += [
            Text(),
            tool_server_table(config.tool_servers, policy, config.policies, missing),
        ]
    if args.model is not None and not admitted:
        lines.append(
            Text(f"No compliant route for `{args.model}` under policy `{policy.policy_id}`.")
        )
    _print(lines)
    return 1 if args.model is not None and not admitted else 0


def _print(renderables: list[RenderableType]) -> None:
    """To a terminal, fitted to its width; piped, one unwrapped line per endpoint."""
    console = Console(highlight=False)
    if console.is_terminal:
        for renderable in renderables:
            console.print(renderable)
        return
    wide = console.options.update_width(1000)
    console.width = max(Measurement.get(console, wide, r).maximum for r in renderables)
    with console.capture() as captured:
        for renderable in renderables:
            console.print(renderable)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _policy(args: argparse.Namespace, config: GatewayConfig) -> Policy:
    policy_id = args.policy or config.default_policy
    base = config.policies.get(policy_id)
    if base is None:
        raise ConfigError(f"unknown policy `{policy_id}` (policies: {', '.join(config.policies)})")
    narrowing = Narrowing(
        allow_classes=args.allow_classes,
        allow_countries=args.allow_countries,
        allow_providers=args.allow_providers,
        source="cli",
    )
    return narrow(base, narrowing, config.policies)


def describe(policy: Policy) -> str:
    """Two lines: where the policy lets calls go, and what it keeps (each rule of the
    predicate table in its own words); a third for personal data."""
    where = [RULES_BY_NAME[n] for n in ("allow_classes", "allow_countries", "allow_providers")]
    keeps = [RULES_BY_NAME[n] for n in ("max_retention", "store_content", "fallback")]
    requirements = [
        r for r in RULES
        if r not in where and r not in keeps and not r.admits_every_site(r.value(policy))
    ]  # fmt: skip

    def said(rules: list[Rule[Any]]) -> list[str]:
        return [text for r in rules if (text := r.describe(r.value(policy))) is not None]

    required = said(requirements)
    return (
        f"Policy {policy.policy_id}: {'; '.join(said(where))};"
        + (f" requires {'; '.join(required)};" if required else "")
        + f"\n{'; '.join(said(keeps))}."
        + (f"\n{describe_rules(policy.personal_data)}." if policy.personal_data else "")
    )


def _table(
    endpoints: tuple[Endpoint, ...],
    verdicts: dict[str, Exclusion | None],
    order: list[Endpoint] | None,
    *,
    wide: bool = False,
) -> Table:
    """One row per endpoint; with a try order (`--model`), a `#` column first. Without
    `wide`, the columns a routing question needs (long decisions and regions wrap); `wide`
    adds the provider's law and assurance, the upstream kind, the default answer length and
    the models each serves."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    if order is not None:
        table.add_column("#", justify="right")
    narrow = {} if wide else {"decision": 36, "region": 24}
    columns = ["endpoint", "decision", "class", "region"]
    columns += ["law", "retention", "upstream"] if wide else ["retention"]
    for name in columns:
        table.add_column(name, max_width=narrow.get(name))
    table.add_column("EUR/Mtok in/out", justify="right")
    if wide:
        table.add_column("max tokens", justify="right")  # applied when a request sets none
    if order is None and wide:
        table.add_column("models", max_width=34)
    rank = {e.endpoint_id: str(i) for i, e in enumerate(order or (), start=1)}
    for endpoint in endpoints:
        cells = [
            Text(endpoint.endpoint_id),
            decision(verdicts[endpoint.endpoint_id]),
            Text(endpoint.sovereignty_class.value),
            Text(f"{endpoint.inference_region} {endpoint.country or '?'}"),
            *([Text(_assurance(endpoint))] if wide else []),
            Text(endpoint.retention.text),
            *([Text(upstream_summary(endpoint))] if wide else []),
            Text(f"{endpoint.prices.input:g} / {endpoint.prices.output:g}"),
            *([Text(str(endpoint.default_max_tokens or "-"))] if wide else []),
        ]
        if order is None:
            table.add_row(*cells, *([Text(" ".join(endpoint.aliases))] if wide else []))
        else:
            table.add_row(Text(rank.get(endpoint.endpoint_id, "")), *cells)
    return table


def upstream_summary(endpoint: Endpoint) -> str:
    """The kind and what a native kind is configured with (never a secret: only names)."""
    options = endpoint.upstream
    parts = [endpoint.kind.value]
    if options.region:
        parts.append(options.region)
    if options.project:
        parts.append(f"project={options.project}")
    if options.deployment:
        parts.append(f"deployment={options.deployment}")
    if options.api_version:
        parts.append(f"api-version={options.api_version}")
    if endpoint.kind is EndpointKind.AZURE_OPENAI:
        parts.append(f"auth={options.auth.value}")
    if options.credentials_file:
        parts.append(f"key-file={options.credentials_file}")
    if options.base_url_env:
        parts.append(f"url=${options.base_url_env}")
    return " ".join(parts)


def _assurance(endpoint: Endpoint) -> str:
    """Jurisdiction of the controlling entity, then SEAL level and certifications if known."""
    parts = [endpoint.jurisdiction or "?"]
    if endpoint.seal is not None:
        parts.append(f"SEAL-{endpoint.seal}")
    parts.extend(sorted(c.value for c in endpoint.certifications))
    return " ".join(parts)


def _summary(verdicts: dict[str, Exclusion | None]) -> str:
    counts = Counter(d.plain.split(" ")[0].rstrip(":") for d in map(decision, verdicts.values()))
    return (
        f"{counts['admitted']} admitted, {counts['excluded']} excluded by the policy, "
        f"{counts['skipped']} skipped"
    )


def decision(verdict: Exclusion | None) -> Text:
    """`admitted`, `excluded by <rule>`, or `skipped: <why it cannot be called>`."""
    if verdict is None:
        return Text("admitted", style="green")
    if verdict.rule == "unavailable":
        return Text(f"skipped: {verdict.reason}", style="yellow")
    return Text(f"excluded by {verdict.rule}", style="red")
