"""`llmeu serve`: build the settings from the command line and run the gateway."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from llmeu.api.routes.access import Role
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseUnavailable, SchemaMismatch
from llmeu.observability.logs import FORMATS
from llmeu.protocol.forwarded import parse_network
from llmeu.routing.durations import Duration


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help="run the gateway")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--config", type=Path, help="catalog and policies (YAML, design §4)")
    parser.add_argument("--data-dir", type=Path, help="where the SQLite ledger lives")
    parser.add_argument(
        "--database-url", help="postgresql://… to share the ledger between processes"
    )
    parser.add_argument(
        "--no-migrate",
        action="store_true",
        help="leave the ledger's schema to `llmeu migrate`: refuse to start on a schema this "
        "release does not run on, rather than migrate it",
    )
    parser.add_argument(
        "--redis-url",
        help="redis://… to share limits, health and the answer cache between processes",
    )
    parser.add_argument(
        "--workers",
        type=_workers,
        help="gateway processes on this port: a number, or `auto` for one per core (1); "
        "more than one needs --redis-url",
    )
    parser.add_argument(
        "--redis-timeout",
        type=float,
        help="seconds a Redis command may take before the limits count as degraded (0.25)",
    )
    parser.add_argument(
        "--keep-metadata",
        type=_duration,
        help="how long call metadata stays in the ledger where the policy does not say "
        "(ISO 8601; P6M, the AI Act's minimum for logs)",
    )
    parser.add_argument(
        "--max-body-bytes", type=int, help="largest request body accepted (413 above)"
    )
    parser.add_argument(
        "--cache-max-bytes",
        type=int,
        help="the most the answer cache holds, per process or in Redis (64 MiB); with "
        "--redis-url, LLMEU_CACHE_KEY encrypts it there",
    )
    parser.add_argument(
        "--head-timeout", type=float, help="seconds a request head may take (10; 408 past it)"
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        help="longest pause in a request body, and its time before --min-body-rate applies (10)",
    )
    parser.add_argument(
        "--min-body-rate", type=int, help="bytes per second a request body must average (8192)"
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        help="open connections per process (default: the descriptor limit less 64)",
    )
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        help="open connections per client address (256; 0 for none, behind a load balancer)",
    )
    proxies = parser.add_argument_group("behind a load balancer (docs/operations.md)")
    proxies.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        type=_network,
        metavar="CIDR",
        help="a network whose connections may name the client in --forwarded-header "
        "(repeatable; IPv4 or IPv6, e.g. 10.0.0.0/8); without it no such header is read",
    )
    proxies.add_argument(
        "--forwarded-header",
        choices=["x-forwarded-for", "forwarded"],
        help="the header the trusted proxies write (x-forwarded-for; or RFC 7239's forwarded)",
    )
    proxies.add_argument(
        "--proxy-protocol",
        action="store_true",
        help="every connection begins with a PROXY protocol header (v1 or v2), and comes "
        "from a --trusted-proxy; any other connection is closed",
    )
    parser.add_argument(
        "--max-body-memory",
        type=int,
        help="bytes of request bodies held at once by a process (64 MiB; 503 above)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.add_argument(
        "--log-format", default="text", choices=FORMATS, help="log lines as text or as JSON"
    )
    parser.add_argument(
        "--otel-content",
        action="store_true",
        help="put prompts and outputs in spans, for calls whose policy stores content",
    )
    parser.add_argument(
        "--no-local", action="store_true", help="do not load the bundled local models"
    )
    parser.add_argument("--local-threads", type=int, help="CPU threads for the local models")
    parser.add_argument(
        "--local-call-timeout",
        type=float,
        help="seconds one local generation may run before it fails alone (300)",
    )
    parser.add_argument(
        "--local-memory-limit",
        type=_bytes,
        help="address space the local models' process may use, e.g. 8G or 512M; 0 for none (8G)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        help="seconds in-flight calls may run on after SIGTERM before they are ended (30)",
    )
    parser.add_argument(
        "--breaker-threshold",
        type=int,
        help="consecutive failures that open an endpoint's circuit (5)",
    )
    parser.add_argument(
        "--breaker-cooldown",
        type=float,
        help="seconds an open circuit waits before a probe call (15)",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="an origin browsers may call from (repeatable; `*` for any); CORS is off without it",
    )
    evidence = parser.add_argument_group("evidence (docs/evidence.md)")
    evidence.add_argument(
        "--signing-key-file", type=Path, help="PEM Ed25519 key for receipts (else the data dir's)"
    )
    evidence.add_argument(
        "--signing-key-dir",
        type=Path,
        help="a directory of PEM keys shared by a fleet (a Kubernetes Secret): the newest by "
        "file name signs, all verify, reread on SIGHUP and when it changes",
    )
    evidence.add_argument(
        "--signing-key-poll",
        type=_positive_seconds,
        help="seconds between two looks at the key files for a change (5)",
    )
    evidence.add_argument(
        "--audit-checkpoint-dir", type=Path, help="also write each signed checkpoint here"
    )
    evidence.add_argument(
        "--checkpoint-every", type=int, help="sign a checkpoint every N traces (1000)"
    )
    evidence.add_argument(
        "--checkpoint-minutes", type=float, help="or every M minutes if the chain moved (5)"
    )
    sso = parser.add_argument_group("single sign-on for the console (docs/sso.md)")
    sso.add_argument("--oidc-issuer", help="the OpenID Connect issuer URL (its discovery base)")
    sso.add_argument("--oidc-client-id", help="this gateway's client id at the issuer")
    sso.add_argument(
        "--oidc-client-secret-env",
        metavar="VAR",
        help="the environment variable holding the client secret (none: a public client)",
    )
    sso.add_argument(
        "--oidc-roles-claim", help="the ID-token claim listing the user's groups (groups)"
    )
    sso.add_argument(
        "--oidc-role-map",
        action="append",
        type=_role_pair,
        default=[],
        metavar="GROUP=ROLE",
        help="members of GROUP act as ROLE (repeatable)",
    )
    sso.add_argument(
        "--oidc-redirect-url",
        help="the callback URL registered at the issuer (default: <this gateway>/auth/callback)",
    )
    sso.add_argument(
        "--console-auth",
        choices=["key", "oidc", "both"],
        help="how the console signs in (key); API keys always work on the API",
    )
    sso.add_argument(
        "--session-idle-timeout", type=float, help="seconds a console session may sit idle (1800)"
    )
    sso.add_argument(
        "--session-max-age", type=float, help="seconds a console session lasts at most (43200)"
    )
    sso.add_argument(
        "--scim-token-env",
        metavar="VAR",
        help="the environment variable holding /scim/v2's bearer token (none: no SCIM)",
    )
    sso.add_argument(
        "--scim-required",
        action="store_true",
        help="only users provisioned by SCIM may sign in to the console",
    )
    parser.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env(
        host=args.host,
        port=args.port,
        config_file=args.config,
        data_dir=args.data_dir,
        database_url=args.database_url,
        migrate=False if args.no_migrate else None,
        redis_url=args.redis_url,
        workers=args.workers,
        redis_timeout_seconds=args.redis_timeout,
        keep_metadata=args.keep_metadata,
        max_body_bytes=args.max_body_bytes,
        cache_max_bytes=args.cache_max_bytes,
        head_timeout_seconds=args.head_timeout,
        body_timeout_seconds=args.body_timeout,
        min_body_rate=args.min_body_rate,
        max_connections=args.max_connections,
        max_connections_per_client=args.max_connections_per_client,
        trusted_proxies=tuple(args.trusted_proxy) or None,
        forwarded_header=args.forwarded_header,
        proxy_protocol=args.proxy_protocol or None,
        max_body_memory_bytes=args.max_body_memory,
        log_level=args.log_level,
        log_format=args.log_format,
        otel_content=args.otel_content or None,
        load_local_models=False if args.no_local else None,
        local_threads=args.local_threads,
        local_call_timeout_seconds=args.local_call_timeout,
        local_memory_limit_bytes=args.local_memory_limit,
        shutdown_grace_seconds=args.shutdown_grace,
        breaker_threshold=args.breaker_threshold,
        breaker_cooldown_seconds=args.breaker_cooldown,
        cors_origins=tuple(args.cors_origin) or None,
        signing_key_file=args.signing_key_file,
        signing_key_dir=args.signing_key_dir,
        signing_key_poll_seconds=args.signing_key_poll,
        audit_checkpoint_dir=args.audit_checkpoint_dir,
        checkpoint_every_traces=args.checkpoint_every,
        checkpoint_every_seconds=None
        if args.checkpoint_minutes is None
        else args.checkpoint_minutes * 60,
        oidc_issuer=args.oidc_issuer,
        oidc_client_id=args.oidc_client_id,
        oidc_client_secret_env=args.oidc_client_secret_env,
        oidc_roles_claim=args.oidc_roles_claim,
        oidc_role_map=tuple(args.oidc_role_map) or None,
        oidc_redirect_url=args.oidc_redirect_url,
        console_auth=args.console_auth,
        session_idle_seconds=args.session_idle_timeout,
        session_max_seconds=args.session_max_age,
        scim_token_env=args.scim_token_env,
        scim_required=args.scim_required or None,
    )
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


def _duration(text: str) -> str:
    try:
        return Duration.parse(text).text
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
