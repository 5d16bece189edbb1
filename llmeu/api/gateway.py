"""The gateway's services, built once from `Settings` and started by the ASGI lifespan.

This is the composition root: it builds every collaborator and hands each
route the one service it works on (`Calls` for inference, `Platform` for the
platform API); no route reaches into it except for its `health()` and
`readiness()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import time
from collections.abc import Coroutine
from typing import Any

from llmeu.api.call.context import CallContext
from llmeu.api.call.door import Calls
from llmeu.api.health import Health
from llmeu.api.services.admin_log import SIGNAL_ACTOR, AdminLog
from llmeu.api.services.answer_cache import CHANGE, CacheService
from llmeu.api.services.auth import KeyRing
from llmeu.api.services.compliance_service import Compliance
from llmeu.api.services.directory import Directory
from llmeu.api.services.evidence_service import Evidence
from llmeu.api.services.mcp_upstreams import ToolServers, breaker_id
from llmeu.api.services.platform_service import Platform
from llmeu.api.services.policies import PolicyBook
from llmeu.api.services.receipt_issuer import Receipts
from llmeu.api.services.response_store import ResponseStore
from llmeu.api.services.signing import KeyReloader, load_signing_keys
from llmeu.api.services.sso import Sso
from llmeu.api.services.team_quotas import TeamBook, ledger_spend
from llmeu.api.services.upstreams import (
    Closable,
    ProviderBuilder,
    Upstreams,
    retire_providers,
    start_providers,
)
from llmeu.api.upkeep import Upkeep
from llmeu.api.welcome import AdminKey, Welcome, announce, chat_model, reachable_root
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError
from llmeu.evidence.signing_keys import KeyRing as SigningKeys
from llmeu.evidence.signing_keys import SigningKey
from llmeu.ledger.chaining import CheckpointPolicy, Checkpoints, chain_pending
from llmeu.ledger.notify import Change, ChangeFeed, DatabaseNotices, NoticeChannel, Propagation
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter, build_limiter
from llmeu.limits.redis_notices import RedisNotices
from llmeu.limits.shared_breaker import SharedCircuitBreaker
from llmeu.observability.hooks import Observers
from llmeu.observability.model_host_metrics import ModelHostCollector
from llmeu.observability.telemetry import Telemetry
from llmeu.providers.transport import HttpClient
from llmeu.routing.breaker import CircuitBreaker
from llmeu.routing.catalog import EndpointKind
from llmeu.routing.config_file import GatewayConfig
from llmeu.routing.durations import Duration
from llmeu.routing.load import load_config

log = logging.getLogger("llmeu")

_SETTLE_WAIT = 5.0


def new_instance_id() -> str:
    return "gw_" + secrets.token_hex(6)


def load_gateway_config(settings: Settings) -> GatewayConfig:
    return load_config(
        settings.config_file, host=socket.gethostname(), local_country=settings.local_country
    )


def _breaker(settings: Settings) -> CircuitBreaker:
    """Per process, or shared by all processes through Redis."""
    if settings.redis_url is None:
        return CircuitBreaker(
            failure_threshold=settings.breaker_threshold,
            cooldown=settings.breaker_cooldown_seconds,
        )
    return SharedCircuitBreaker(
        settings.redis_url,
        failure_threshold=settings.breaker_threshold,
        cooldown=settings.breaker_cooldown_seconds,
        timeout=settings.redis_timeout_seconds,
    )


_CONSOLE_AUTH = {"key": ("key",), "oidc": ("oidc",), "both": ("key", "oidc")}


class Gateway:
    def __init__(
        self,
        settings: Settings,
        config: GatewayConfig,
        store: Store,
        instance_id: str | None = None,
        signing: SigningKeys | None = None,
    ):
        """Everything that needs no I/O; `build` validates the configuration and reads the
        signing keys first (`signing`: a fresh key in memory when not given)."""
        self.settings = settings
        self.config = config
        self.store = store
        self.instance_id = instance_id or new_instance_id()
        # Other processes write this ledger too: a shared database, or worker processes
        # on one machine (which then find only dead processes' calls `interrupted`).
        self.shared = store.shared or settings.workers > 1
        self.started_at = time.time()
        self.ledger = Ledger(store, buffer_limit=settings.ledger_buffer)
        self.keys = KeyRing(store)
        self.teams = TeamBook(store)
        self.policies = PolicyBook(config.policies, config.default_policy, store)
        self.http = HttpClient()
        self.breaker = _breaker(settings)
        self.limits: Limiter = build_limiter(
            settings.redis_url, redis_timeout=settings.redis_timeout_seconds
        )
        self.providers = ProviderBuilder(settings, self.http)
        self.upstreams = Upstreams(
            config.catalog, *self.providers.build(config.catalog), breaker=self.breaker
        )
        self.answers = CacheService.build(settings, lambda: self.upstreams, self.broadcast)
        self.tool_servers = self._tool_servers()
        self.telemetry = Telemetry.build(
            settings,
            config.catalog,
            ledger=self.ledger,
            breaker=self.breaker,
            limiter=self.limits.state,
            cache=self.answers.cache,
            circuits=[breaker_id(s) for s in config.tool_servers.servers],
        )
        self.observers = Observers(self.telemetry.observers)
        self.receipts = Receipts(signing or SigningKeys(SigningKey.generate()))
        self.checkpoints = Checkpoints(
            store.db,
            self.receipts.ring.active,
            CheckpointPolicy(
                settings.checkpoint_every_traces,
                settings.checkpoint_every_seconds,
                settings.audit_checkpoint_dir,
            ),
        )
        self.signing = KeyReloader(settings, self._use_signing_keys)
        self.calls = Calls(
            CallContext(
                keys=self.keys, policies=self.policies, upstreams=self.upstreams,
                tool_servers=self.tool_servers, ledger=self.ledger, limits=self.limits,
                observers=self.observers,
                receipts=self.receipts, instance_id=self.instance_id,
                max_body_bytes=settings.max_body_bytes,
                keep_metadata=Duration.parse(settings.keep_metadata), cache=self.answers.cache,
                cors_origins=frozenset(o.rstrip("/") for o in settings.cors_origins),
                teams=self.teams,
            )
        )  # fmt: skip
        directory = Directory(store.db, settings.oidc_role_map,
                              scim_required=settings.scim_required)  # fmt: skip
        self.platform = Platform(
            self.keys, self.policies, store, self.upstreams, self.broadcast, self.reload,
            answers=self.answers, tool_servers=self.tool_servers,
            admin_log=AdminLog(store, self.instance_id),
            sso=Sso(settings, self.http, store.db, directory) if settings.oidc_issuer else None,
            signing_keys=lambda: self.receipts.ring, reload_signing_keys=self.signing.reload,
            console_auth=_CONSOLE_AUTH[settings.console_auth], teams=self.teams,
            directory=directory, scim_token=settings.scim_token,
        )  # fmt: skip
        self.evidence = Evidence(self.platform, self.receipts)
        self.compliance = Compliance(self.platform)
        self.responses = ResponseStore(store.db)
        self.health = Health(self.calls, self.ledger, self.limits, self.instance_id,
                             lambda: self.loaded, lambda: self.upstreams.down())  # fmt: skip
        if any(e.kind is EndpointKind.LOCAL for e in config.catalog.endpoints):
            self.telemetry.registry.register(ModelHostCollector(self.providers.model_host))
        self.upkeep = Upkeep(settings, store, self.instance_id, self.shared, self.keys,
                             self.teams, self.policies, self.answers,
                             self.checkpoints)  # fmt: skip
        self.ledger.on_finals = self.upkeep.count_finals
        self.changes: ChangeFeed | None = None  # with a shared ledger: changes others apply
        self.loaded = False
        self._tasks: list[asyncio.Task[None]] = []
        self._reloading = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._redis_notices: RedisNotices | None = None

    @classmethod
    def build(cls, settings: Settings, instance_id: str | None = None) -> Gateway:
        store = Store(open_database(settings.effective_database_url))
        config = load_gateway_config(settings)
        return cls(settings, config, store, instance_id, load_signing_keys(settings))

    def _tool_servers(self) -> ToolServers:
        return ToolServers(self.config.tool_servers, self.http, self.settings.environ, self.breaker)

    async def start(self) -> None:
        settings = self.settings
        await self.store.db.open()
        if settings.migrate:
            await self.store.migrate(live_after=time.time() - 3 * settings.heartbeat_seconds)
        await self.store.check_schema()  # also after migrating: a newer release's contract step
        now = time.time()
        shared = self.shared
        # A ledger of one process: whatever a previous process left in progress was
        # interrupted. A shared one: only processes whose heartbeat stopped are gone.
        live_after = now + 1 if not shared else now - 3 * settings.heartbeat_seconds
        interrupted = await self.store.mark_interrupted(live_after, now)
        if interrupted:
            log.warning("marked %d calls of a stopped gateway process as interrupted", interrupted)
        # The chain takes a call found `interrupted` as it is once no process can still
        # finish it: at once for a ledger of one process, after a while for a shared one.
        settled = live_after if not shared else now - self.store.interrupted_settle_seconds
        await chain_pending(self.store.db, settled)
        channel = self._notice_channel()
        if channel is not None:
            self.changes = ChangeFeed(
                channel, self.store, self.instance_id, self._apply_change,
                live_window=3 * settings.heartbeat_seconds,
            )  # fmt: skip
            await self.changes.start()  # listening before others can count on this process
        await self.store.register_instance(self.instance_id, now)
        await self.keys.load()
        await self.teams.load()
        token = await self.keys.ensure_admin(settings.admin_key, self.config.default_policy)
        await self.policies.load()
        self.ledger.start()
        await self.limits.start(lambda: ledger_spend(self.store))
        if isinstance(self.breaker, SharedCircuitBreaker):  # the endpoints' and tool servers'
            self.breaker.start([*(e.endpoint_id for e in self.config.catalog.endpoints),
                                *map(breaker_id, self.config.tool_servers.servers)])  # fmt: skip
        await start_providers(self.upstreams)
        self.answers.announce(self.policies.policies.values())
        self._tasks.append(asyncio.create_task(self.upkeep.maintain(self.changes),
                                               name="llmeu-maintenance"))  # fmt: skip
        self._tasks.append(asyncio.create_task(self.upkeep.checkpoint(), name="llmeu-checkpoints"))
        self._tasks.append(asyncio.create_task(self.signing.watch(), name="llmeu-signing-keys"))
        self._loop = asyncio.get_running_loop()
        self.loaded = True
        if token is not None or settings.workers == 1:  # workers: one notice, not one each
            self._welcome(token)

    def _welcome(self, token: str | None) -> None:
        state = AdminKey.EXISTING
        if token is not None:
            state = AdminKey.GENERATED
        elif self.settings.admin_key:
            state = AdminKey.CONFIGURED
        available = self.upstreams.providers
        chat = [e for e in self.config.catalog.endpoints if e.endpoint_id in available]
        root = reachable_root(self.settings.host, self.settings.port)
        announce(Welcome(root, state, token, chat_model(chat)), log_format=self.settings.log_format)

    def _notice_channel(self) -> NoticeChannel | None:
        """How changes reach the other processes: the database's own notices where it has
        them, else Redis's (workers on one SQLite ledger), else nobody else to tell."""
        if self.store.db.dialect.change_notices:
            return DatabaseNotices(self.store.db)
        if self.shared and self.settings.redis_url is not None:
            self._redis_notices = RedisNotices(
                self.settings.redis_url, timeout=self.settings.redis_timeout_seconds
            )
            return self._redis_notices
        return None

    async def _apply_change(self, change: Change) -> None:
        """Another gateway process revoked a key, replaced a policy, changed a team or
        reloaded its configuration file."""
        if change.kind == "key":
            await self.keys.reload(change.ident)
        elif change.kind == "team":
            await self.teams.load()
        elif change.kind == "policy":
            await self.answers.policies_changed(await self.policies.load())
        elif change.kind == "config":  # `POST /v1/platform/reload`: the keys too
            try:
                await self.reload(tell_others=False)
            finally:
                await self.signing.reload()
        elif change.kind == CHANGE:
            await self.answers.apply(change.ident)

    async def reload(self, *, tell_others: bool = True) -> None:
        """Read the configuration file again. Calls in flight finish on the catalog and
        policies they started with; new calls use the new ones. An invalid file changes
        nothing and raises its `ConfigError`. Endpoints that did not change keep their
        provider (a loaded local model stays loaded); the providers of endpoints that went
        away are closed once the calls in flight have ended."""
        async with self._reloading:
            config = load_gateway_config(self.settings)
            previous = self.upstreams
            reuse = {
                previous.catalog.get(eid): provider for eid, provider in previous.providers.items()
            }
            self.config = config
            providers, unavailable = self.providers.build(
                config.catalog, {e: p for e, p in reuse.items() if e is not None}
            )
            upstreams = Upstreams(config.catalog, providers, unavailable, self.breaker)
            kept = frozenset(eid for eid, p in providers.items() if p in reuse.values())
            await start_providers(upstreams, kept)
            changed = self.policies.configure(config.policies, config.default_policy)
            await self.answers.policies_changed(changed)
            self.upstreams = self.calls.context.upstreams = self.platform.upstreams = upstreams
            gone: list[Closable] = [self.tool_servers]
            gone += [p for p in previous.providers.values() if p not in providers.values()]
            tools = self.tool_servers = self.calls.context.tool_servers = self._tool_servers()
            self.platform.tool_servers = tools
            in_flight = set(self.calls.context.inflight.values())
            grace = self.settings.shutdown_grace_seconds
            self._spawn(retire_providers(gone, in_flight, grace))
            log.warning("configuration reloaded: %d endpoints, %d policies",
                        len(config.catalog.endpoints), len(self.policies.policies))  # fmt: skip
        if tell_others:
            await self.broadcast("config", "reload")

    def _use_signing_keys(self, ring: SigningKeys) -> bool:
        """Sign receipts and checkpoints with `ring` from the next one on (`KeyReloader`)."""
        if not self.receipts.use(ring):
            return False
        self.checkpoints.key = ring.active
        return True

    def reload_soon(self) -> None:
        """Reload the configuration file and the signing keys from a signal handler
        (SIGHUP): on the event loop, logging any failure; either may fail alone."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._reload_in_background)

    def _reload_in_background(self) -> None:
        async def reload() -> None:
            before: dict[str, Any] | None = self.platform.configuration_state()
            try:
                await self.reload(tell_others=False)
            except ConfigError as error:
                log.error("configuration not reloaded, the previous one stays: %s", error)
                before = None
            await self.signing.reload()  # either may fail alone
            if before is not None:
                await self._record_signal_reload(before)

        self._spawn(reload())

    async def _record_signal_reload(self, before: dict[str, Any]) -> None:
        """A configuration reloaded by signal is an admin event too: its actor is the signal
        (whoever may signal the process runs the host), with no role and no address."""
        after = self.platform.configuration_state()
        try:
            await self.platform.admin_log.record(
                SIGNAL_ACTOR, "config.reload", "configuration", before=before, after=after
            )
        except DatabaseError as error:
            log.error("the reload's admin event could not be written: %s", error)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Background work that ends by itself (stopped with the gateway if it has not)."""
        task = asyncio.create_task(work)
        self._tasks.append(task)
        task.add_done_callback(self._tasks.remove)

    async def broadcast(self, kind: str, ident: str) -> Propagation | None:
        """Make a change this process applied hold in every other process (shared ledger)."""
        return None if self.changes is None else await self.changes.publish(kind, ident)

    async def stop(self) -> None:
        """Refuse new calls, let those still in flight record how they ended, then stop."""
        self.calls.stop_accepting()
        await self.calls.settle_inflight(_SETTLE_WAIT)
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.ledger.stop()
        if self.changes is not None:
            await self.changes.close()
        if self._redis_notices is not None:
            await self._redis_notices.aclose()
        with contextlib.suppress(DatabaseError):  # others then stop waiting for this process
            await self.store.unregister_instance(self.instance_id)
        await self.limits.aclose()
        await self.answers.aclose()
        if isinstance(self.breaker, SharedCircuitBreaker):
            await self.breaker.aclose()
        await asyncio.to_thread(self.telemetry.shutdown)
        for provider in self.upstreams.providers.values():
            await provider.aclose()
        await self.tool_servers.aclose()
        await self.http.aclose()
        await self.store.db.close()
