"""`llmeu serve`: build the settings from the command line and run the gateway.

Every flag is one row of `OPTIONS`: its argparse options and the `Settings` field it
sets, through a named conversion where the flag's value is not the field's (a `--no-…`
switch, a repeatable flag, minutes for seconds). A flag not given leaves its field to
the environment and the default (`Settings.from_env`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmeu.api.routes.access import Role
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseUnavailable, SchemaMismatch
from llmeu.observability.logs import FORMATS
from llmeu.protocol.forwarded import parse_network
from llmeu.routing.durations import Duration


def _given(value: Any) -> Any:
    return value


def _false_or_unset(flag_set: bool) -> bool | None:
    """A `--no-…` switch: False when given, else left to the environment and the default."""
    return False if flag_set else None


def _true_or_unset(flag_set: bool) -> bool | None:
    return True if flag_set else None


def _tuple_or_unset(values: list[Any]) -> tuple[Any, ...] | None:
    """A repeatable flag: its values, or the environment's and the default's when never given."""
    return tuple(values) or None


def _minutes_as_seconds(minutes: float | None) -> float | None:
    return None if minutes is None else minutes * 60


@dataclass(frozen=True, slots=True)
class Option:
    """One `serve` flag: how argparse reads it, and the `Settings` field its value sets
    (through `convert`)."""

    flag: str
    field: str
    argparse: dict[str, Any]
    convert: Callable[[Any], Any] = _given
    group: str | None = None

    @property
    def dest(self) -> str:
        return str(self.argparse.get("dest", self.flag.removeprefix("--").replace("-", "_")))


def option(
    flag: str,
    field: str,
    *,
    convert: Callable[[Any], Any] = _given,
    group: str | None = None,
    **argparse: Any,
) -> Option:
    return Option(flag, field, argparse, convert, group)


def _role_pair(value: str) -> tuple[str, str]:
    group, sep, role = value.rpartition("=")
    roles = [r.value for r in Role]
    if not sep or not group or role not in roles:
        raise argparse.ArgumentTypeError(f"GROUP=ROLE, ROLE one of {', '.join(roles)}")
    return group, role


def _network(value: str) -> str:
    try:
        return str(parse_network(value))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an IPv4 or IPv6 network (CIDR, e.g. 10.0.0.0/8) or address"
        ) from None


def _workers(value: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("a number of workers, or `auto`") from None
    if count < 1:
        raise argparse.ArgumentTypeError("at least 1 worker")
    return count


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError("more than 0 seconds")
    return seconds


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _bytes(value: str) -> int:
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    try:
        count = float(text[: len(text) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError("a size in bytes, e.g. 8G, 512M or 0") from None
    if count < 0:
        raise argparse.ArgumentTypeError("a size of 0 or more")
    return int(count)


def _duration(text: str) -> str:
    try:
        return Duration.parse(text).text
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_PROXIES = "behind a load balancer (docs/operations.md)"
_EVIDENCE = "evidence (docs/evidence.md)"
_SSO = "single sign-on for the console (docs/sso.md)"

OPTIONS = (
    option("--host", "host", default="127.0.0.1"),
    option("--port", "port", type=int, default=8080),
    option("--config", "config_file", type=Path, help="catalog and policies (YAML, design §4)"),
    option("--data-dir", "data_dir", type=Path, help="where the SQLite ledger lives"),
    option("--database-url", "database_url",
           help="postgresql://… to share the ledger between processes"),
    option("--no-migrate", "migrate", convert=_false_or_unset, action="store_true",
           help="leave the ledger's schema to `llmeu migrate`: refuse to start on a schema "
           "this release does not run on, rather than migrate it"),
    option("--redis-url", "redis_url",
           help="redis://… to share limits, health and the answer cache between processes"),
    option("--workers", "workers", type=_workers,
           help="gateway processes on this port: a number, or `auto` for one per core (1); "
           "more than one needs --redis-url"),
    option("--redis-timeout", "redis_timeout_seconds", type=float,
           help="seconds a Redis command may take before the limits count as degraded (0.25)"),
    option("--keep-metadata", "keep_metadata", type=_duration,
           help="how long call metadata stays in the ledger where the policy does not say "
           "(ISO 8601; P6M, the AI Act's minimum for logs)"),
    option("--max-body-bytes", "max_body_bytes", type=int,
           help="largest request body accepted (413 above)"),
    option("--cache-max-bytes", "cache_max_bytes", type=int,
           help="the most the answer cache holds, per process or in Redis (64 MiB); with "
           "--redis-url, LLMEU_CACHE_KEY encrypts it there"),
    option("--head-timeout", "head_timeout_seconds", type=float,
           help="seconds a request head may take (10; 408 past it)"),
    option("--body-timeout", "body_timeout_seconds", type=float,
           help="longest pause in a request body, and its time before --min-body-rate "
           "applies (10)"),
    option("--min-body-rate", "min_body_rate", type=int,
           help="bytes per second a request body must average (8192)"),
    option("--max-connections", "max_connections", type=int,
           help="open connections per process (default: the descriptor limit less 64)"),
    option("--max-connections-per-client", "max_connections_per_client", type=int,
           help="open connections per client address (256; 0 for none, behind a load "
           "balancer)"),
    option("--trusted-proxy", "trusted_proxies", convert=_tuple_or_unset, group=_PROXIES,
           action="append", default=[], type=_network, metavar="CIDR",
           help="a network whose connections may name the client in --forwarded-header "
           "(repeatable; IPv4 or IPv6, e.g. 10.0.0.0/8); without it no such header is read"),
    option("--forwarded-header", "forwarded_header", group=_PROXIES,
           choices=["x-forwarded-for", "forwarded"],
           help="the header the trusted proxies write (x-forwarded-for; or RFC 7239's "
           "forwarded)"),
    option("--proxy-protocol", "proxy_protocol", convert=_true_or_unset, group=_PROXIES,
           action="store_true",
           help="every connection begins with a PROXY protocol header (v1 or v2), and comes "
           "from a --trusted-proxy; any other connection is closed"),
    option("--max-body-memory", "max_body_memory_bytes", type=int,
           help="bytes of request bodies held at once by a process (64 MiB; 503 above)"),
    option("--log-level", "log_level", default="info",
           choices=["debug", "info", "warning", "error"]),
    option("--log-format", "log_format", default="text", choices=FORMATS,
           help="log lines as text or as JSON"),
    option("--otel-content", "otel_content", convert=_true_or_unset, action="store_true",
           help="put prompts and outputs in spans, for calls whose policy stores content"),
    option("--no-local", "load_local_models", convert=_false_or_unset, action="store_true",
           help="do not load the bundled local models"),
    option("--local-threads", "local_threads", type=int,
           help="CPU threads for the local models"),
    option("--local-call-timeout", "local_call_timeout_seconds", type=float,
           help="seconds one local generation may run before it fails alone (300)"),
    option("--local-memory-limit", "local_memory_limit_bytes", type=_bytes,
           help="address space the local models' process may use, e.g. 8G or 512M; 0 for "
           "none (8G)"),
    option("--shutdown-grace", "shutdown_grace_seconds", type=float,
           help="seconds in-flight calls may run on after SIGTERM before they are ended (30)"),
    option("--breaker-threshold", "breaker_threshold", type=int,
           help="consecutive failures that open an endpoint's circuit (5)"),
    option("--breaker-cooldown", "breaker_cooldown_seconds", type=float,
           help="seconds an open circuit waits before a probe call (15)"),
    option("--cors-origin", "cors_origins", convert=_tuple_or_unset, action="append",
           default=[],
           help="an origin browsers may call from (repeatable; `*` for any); CORS is off "
           "without it"),
    option("--signing-key-file", "signing_key_file", group=_EVIDENCE, type=Path,
           help="PEM Ed25519 key for receipts (else the data dir's)"),
    option("--signing-key-dir", "signing_key_dir", group=_EVIDENCE, type=Path,
           help="a directory of PEM keys shared by a fleet (a Kubernetes Secret): the newest "
           "by file name signs, all verify, reread on SIGHUP and when it changes"),
    option("--signing-key-poll", "signing_key_poll_seconds", group=_EVIDENCE,
           type=_positive_seconds,
           help="seconds between two looks at the key files for a change (5)"),
    option("--audit-checkpoint-dir", "audit_checkpoint_dir", group=_EVIDENCE, type=Path,
           help="also write each signed checkpoint here"),
    option("--checkpoint-every", "checkpoint_every_traces", group=_EVIDENCE, type=int,
           help="sign a checkpoint every N traces (1000)"),
    option("--checkpoint-minutes", "checkpoint_every_seconds", convert=_minutes_as_seconds,
           group=_EVIDENCE, type=float,
           help="or every M minutes if the chain moved (5)"),
    option("--oidc-issuer", "oidc_issuer", group=_SSO,
           help="the OpenID Connect issuer URL (its discovery base)"),
    option("--oidc-client-id", "oidc_client_id", group=_SSO,
           help="this gateway's client id at the issuer"),
    option("--oidc-client-secret-env", "oidc_client_secret_env", group=_SSO, metavar="VAR",
           help="the environment variable holding the client secret (none: a public client)"),
    option("--oidc-roles-claim", "oidc_roles_claim", group=_SSO,
           help="the ID-token claim listing the user's groups (groups)"),
    option("--oidc-role-map", "oidc_role_map", convert=_tuple_or_unset, group=_SSO,
           action="append", type=_role_pair, default=[], metavar="GROUP=ROLE",
           help="members of GROUP act as ROLE (repeatable)"),
    option("--oidc-redirect-url", "oidc_redirect_url", group=_SSO,
           help="the callback URL registered at the issuer (default: <this "
           "gateway>/auth/callback)"),
    option("--console-auth", "console_auth", group=_SSO, choices=["key", "oidc", "both"],
           help="how the console signs in (key); API keys always work on the API"),
    option("--session-idle-timeout", "session_idle_seconds", group=_SSO, type=float,
           help="seconds a console session may sit idle (1800)"),
    option("--session-max-age", "session_max_seconds", group=_SSO, type=float,
           help="seconds a console session lasts at most (43200)"),
    option("--scim-token-env", "scim_token_env", group=_SSO, metavar="VAR",
           help="the environment variable holding /scim/v2's bearer token (none: no SCIM)"),
    option("--scim-required", "scim_required", convert=_true_or_unset, group=_SSO,
           action="store_true",
           help="only users provisioned by SCIM may sign in to the console"),
)  # fmt: skip
"""Every `serve` flag, in the order `--help` lists them: a new flag is one row."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help="run the gateway")
    groups: dict[str | None, Any] = {None: parser}
    for row in OPTIONS:
        if row.group not in groups:
            groups[row.group] = parser.add_argument_group(row.group)
        groups[row.group].add_argument(row.flag, **row.argparse)
    parser.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Settings:
    given = {row.field: row.convert(getattr(args, row.dest)) for row in OPTIONS}
    settings = Settings.from_env(**given)
    check_sso(settings)
    return settings


def check_sso(settings: Settings) -> None:
    """Single sign-on needs both the issuer and the client id; `--console-auth oidc` or
    `both` needs them set up."""
    if bool(settings.oidc_issuer) != bool(settings.oidc_client_id):
        raise ConfigError("--oidc-issuer and --oidc-client-id go together", field="oidc_client_id")
    if settings.console_auth != "key" and not settings.oidc_issuer:
        raise ConfigError(
            f"--console-auth {settings.console_auth} needs --oidc-issuer", field="console_auth"
        )
    if settings.oidc_client_secret_env and settings.oidc_client_secret is None:
        raise ConfigError(
            f"--oidc-client-secret-env names ${settings.oidc_client_secret_env}, which is unset",
            field="oidc_client_secret_env",
        )
    if settings.scim_token_env and not settings.scim_token:
        raise ConfigError(
            f"--scim-token-env names ${settings.scim_token_env}, which is unset or empty",
            field="scim_token_env",
        )
    if settings.scim_required and not settings.scim_token:
        raise ConfigError("--scim-required needs --scim-token-env", field="scim_required")


def run(args: argparse.Namespace) -> int:
    from llmeu.server import run as serve

    try:
        settings = settings_from_args(args)
    except ConfigError as error:
        print(f"llmeu serve: {error}", file=sys.stderr)
        return 2
    if not settings.migrate:
        refusal = asyncio.run(_schema_refusal(settings))
        if refusal is not None:
            print(f"llmeu serve: {refusal}", file=sys.stderr)
            return 1
    return serve(settings)


async def _schema_refusal(settings: Settings) -> str | None:
    """`--no-migrate`: why this release must not start on the ledger as it is, said before
    anything else starts (a SQLite file is created, as the gateway would). A database that
    cannot be reached now is left to the gateway's start, which reports it (and checks the
    schema again, as every start does)."""
    from llmeu.ledger.opening import open_database
    from llmeu.ledger.store import Store

    database = open_database(settings.effective_database_url)
    try:
        await database.open()
    except DatabaseUnavailable:
        return None
    try:
        await Store(database).check_schema()
    except SchemaMismatch as error:
        return str(error)
    finally:
        await database.close()
    return None
