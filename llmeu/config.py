"""Settings: one frozen object, built once (by the CLI or a test) and passed in.

Nothing else in llmeu reads the environment: `Settings.from_env` is the one
place that does, and it snapshots the variables the catalog's endpoints name
for their API keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "llmeu"


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = DEFAULT_DATA_DIR
    config_file: Path | None = None
    database_url: str | None = None
    redis_url: str | None = None
    redis_timeout_seconds: float = 0.25
    admin_key: str | None = None
    max_body_bytes: int = 4 << 20
    head_timeout_seconds: float = 10.0
    """A request head must be complete this long after the connection opened (or its first
    byte, on a kept-alive connection): 408 past it."""
    body_timeout_seconds: float = 10.0
    """The longest pause inside a request body, and the time a body has before it must keep
    up with `min_body_rate`: 408 past either."""
    min_body_rate: int = 8 << 10
    """Bytes per second a request body must average once its first `body_timeout_seconds`
    are over (a 4 MiB body may take 10 s + 512 s)."""
    max_connections: int = 0
    """Open connections per process; 0: the descriptor limit less what the process needs."""
    max_connections_per_client: int = 256
    """Open connections per client address (429 above); 0: no cap."""
    trusted_proxies: tuple[str, ...] = ()
    """Networks (CIDR) of the proxies whose forwarding header names the client
    (`llmeu.protocol.forwarded`); empty: the peer is the client, no header is read."""
    forwarded_header: str = "x-forwarded-for"
    """The header the trusted proxies write: `x-forwarded-for` or `forwarded` (RFC 7239)."""
    proxy_protocol: bool = False
    """Every connection begins with a PROXY protocol header (v1 or v2) from a trusted proxy."""
    max_body_memory_bytes: int = 64 << 20
    """Request bodies held in memory at once, all requests of the process together (503
    above); never less than `max_body_bytes`."""
    log_level: str = "info"
    log_format: str = "text"
    otel_content: bool = False
    cors_origins: tuple[str, ...] = ()
    local_threads: int = 2
    local_country: str = ""
    load_local_models: bool = True
    model_host_socket: Path | None = None
    """The model host's socket (`llmeu serve` launches one per machine and passes it to
    every worker); None: the gateway launches its own when it serves a local endpoint."""
    model_host_fault: str | None = None
    """Why the model host `llmeu serve` launched could not start: the local endpoints are
    unavailable with this reason."""
    local_call_timeout_seconds: float = 300.0
    """Seconds one local generation may run before it fails alone (`local_call_timeout`)."""
    local_memory_limit_bytes: int = 8 << 30
    """The model host's address-space ceiling (RLIMIT_AS); 0: none."""
    model_host_test_fault: str | None = None
    """A test hook (`LLMEU_MODEL_HOST_FAULT=start`): the model host faults after its start
    check, as a build for another CPU would. For the tests of that path only."""
    shutdown_grace_seconds: float = 30.0
    workers: int = 1
    breaker_threshold: int = 5
    breaker_cooldown_seconds: float = 15.0
    purge_interval_seconds: float = 300.0
    keep_metadata: str = "P6M"
    """ISO 8601: how long call metadata is kept where the policy does not say."""
    heartbeat_seconds: float = 5.0
    migrate: bool = True
    """Apply the ledger's pending migrations at start (`llmeu serve`); False (`--no-migrate`):
    refuse to start on a schema this release does not run on, leaving migrations to
    `llmeu migrate` (llmeu.ledger.schema)."""
    ledger_buffer: int = 10_000
    signing_key_file: Path | None = None
    """A PEM (PKCS#8) Ed25519 key to sign receipts and checkpoints with; else
    `signing_key_env`, else `signing_key_dir`, else a key generated into
    `generated_signing_key_dir`."""
    signing_key_env: str = "LLMEU_SIGNING_KEY"
    """The environment variable that may hold the signing key's PEM text."""
    signing_key_dir: Path | None = None
    """A fleet's key directory (`llmeu.evidence.key_directory`): PEM files shared by every
    gateway, the newest private key signing, reread on SIGHUP and when it changes."""
    signing_key_poll_seconds: float = 5.0
    """How often a gateway looks whether its key files changed (file metadata only)."""
    signing_retired_keys: tuple[Path, ...] = ()
    """Public keys (PEM, or a JWKS) of earlier signing keys, still published."""
    cache_max_bytes: int = 64 << 20
    """The most the answer cache holds (its entries encoded), per process or in Redis; the
    least recently used go first."""
    cache_key: str | None = field(default=None, repr=False)
    """The secret the answer cache's entries are encrypted with in Redis (`LLMEU_CACHE_KEY`);
    without it, the cache stays in each process."""
    checkpoint_every_traces: int = 1000
    checkpoint_every_seconds: float = 300.0
    audit_checkpoint_dir: Path | None = None
    """Where each signed checkpoint is also written, one file each (append-only)."""
    oidc_issuer: str | None = None
    """The OpenID Connect issuer the console signs in with (docs/sso.md); None: no sign-in
    with the organisation."""
    oidc_client_id: str | None = None
    oidc_client_secret_env: str | None = None
    """The environment variable holding the client secret; None: a public client (PKCE only)."""
    oidc_client_secret: str | None = field(default=None, repr=False)
    oidc_roles_claim: str = "groups"
    """The ID-token claim whose values (group names) `oidc_role_map` maps to roles."""
    oidc_role_map: tuple[tuple[str, str], ...] = ()
    """(group, role) pairs: a user holds the role of every group of theirs that is listed."""
    oidc_redirect_url: str | None = None
    """The callback URL as registered at the issuer; None: this gateway's `/auth/callback`
    at the address the browser used."""
    console_auth: str = "key"
    """How the console signs in: `key` (an API key), `oidc` (the issuer only; keys still
    work on the API) or `both`."""
    session_idle_seconds: float = 1800.0
    session_max_seconds: float = 43200.0
    scim_token_env: str | None = None
    """The environment variable holding the bearer token of `/scim/v2` (docs/sso.md); None:
    no SCIM, its routes answer 404."""
    scim_token: str | None = field(default=None, repr=False)
    scim_required: bool = False
    """Only users provisioned by SCIM may sign in to the console."""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = dict(os.environ if environ is None else environ)
        values: dict[str, object] = {
            "admin_key": env.get("LLMEU_ADMIN_KEY") or None,
            "database_url": env.get("LLMEU_DATABASE_URL") or None,
            "redis_url": env.get("LLMEU_REDIS_URL") or None,
            "cache_key": env.get("LLMEU_CACHE_KEY") or None,
            "local_country": env.get("LLMEU_LOCAL_COUNTRY", ""),
            "model_host_test_fault": env.get("LLMEU_MODEL_HOST_FAULT") or None,
            "environ": env,
        }
        if env.get("LLMEU_DATA_DIR"):
            values["data_dir"] = Path(env["LLMEU_DATA_DIR"])
        if env.get("LLMEU_SIGNING_KEY_FILE"):
            values["signing_key_file"] = Path(env["LLMEU_SIGNING_KEY_FILE"])
        if env.get("LLMEU_SIGNING_KEY_DIR"):
            values["signing_key_dir"] = Path(env["LLMEU_SIGNING_KEY_DIR"])
        if env.get("LLMEU_SIGNING_RETIRED_KEYS"):
            retired = env["LLMEU_SIGNING_RETIRED_KEYS"].split(os.pathsep)
            values["signing_retired_keys"] = tuple(Path(p) for p in retired if p)
        if env.get("LLMEU_AUDIT_CHECKPOINT_DIR"):
            values["audit_checkpoint_dir"] = Path(env["LLMEU_AUDIT_CHECKPOINT_DIR"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        secret_env = values.get("oidc_client_secret_env")
        if isinstance(secret_env, str) and env.get(secret_env):
            values["oidc_client_secret"] = env[secret_env]
        token_env = values.get("scim_token_env")
        if isinstance(token_env, str) and env.get(token_env):
            values["scim_token"] = env[token_env]
        return cls(**values)  # type: ignore[arg-type]

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'llmeu.db'}"

    @property
    def generated_signing_key_dir(self) -> Path:
        """Where a gateway without a configured key generates its own (one machine's)."""
        return self.data_dir / "signing-keys"

    @property
    def otel_environ(self) -> dict[str, str]:
        """The standard OpenTelemetry variables (`OTEL_*`), read by llmeu.observability."""
        return {k: v for k, v in self.environ.items() if k.startswith("OTEL_")}
