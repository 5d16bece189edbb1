"""The gateway's services, built once from `Settings` and started by the ASGI lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from llmeu.api.auth import KeyRing, announce_admin_key
from llmeu.api.observers import Observers
from llmeu.api.policies import PolicyBook
from llmeu.config import Settings, load_gateway_config, missing_credentials
from llmeu.errors import ConfigError
from llmeu.ledger.database import DatabaseError, open_database
from llmeu.ledger.notify import Change, ChangeFeed, Propagation
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter, build_limiter
from llmeu.limits.health import SharedCircuitBreaker
from llmeu.observability.telemetry import Telemetry
from llmeu.providers.base import Provider
from llmeu.providers.http import HttpClient
from llmeu.providers.registry import build_provider
from llmeu.routing.config_file import GatewayConfig
from llmeu.routing.health import CircuitBreaker

log = logging.getLogger("llmeu")

_INTERRUPT_WAIT = 5.0


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
    )


@dataclass
class Gateway:
    settings: Settings
    config: GatewayConfig
    store: Store
    ledger: Ledger
    keys: KeyRing
    policies: PolicyBook
    http: HttpClient
    providers: dict[str, Provider]
    unavailable: dict[str, str]
    breaker: CircuitBreaker
    limits: Limiter
    instance_id: str = field(default_factory=lambda: "gw_" + secrets.token_hex(6))
    observers: Observers = field(default_factory=Observers)
    started_at: float = field(default_factory=time.time)
    accepting: bool = True
    interrupting: bool = False  # set when the shutdown grace ran out (see `drain`)
    inflight: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    changes: ChangeFeed | None = None  # with PostgreSQL: changes other processes apply
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    telemetry: Telemetry = field(init=False)

    def __post_init__(self) -> None:
        self.telemetry = Telemetry.build(
            self.settings, self.config.catalog, ledger=self.ledger, breaker=self.breaker
        )
        for observer in self.telemetry.observers:
            self.observers.add(observer)

    @classmethod
    def build(cls, settings: Settings) -> Gateway:
        """Everything that needs no I/O: validates the configuration up front."""
        config = load_gateway_config(settings)
        store = Store(open_database(settings.effective_database_url))
        http = HttpClient()
        unavailable = missing_credentials(config, settings.environ)
        providers: dict[str, Provider] = {}
        for endpoint in config.catalog.endpoints:
            if endpoint.endpoint_id in unavailable:
                continue
            if endpoint.kind == "local" and not settings.load_local_models:
                unavailable[endpoint.endpoint_id] = "local models are disabled (--no-local)"
                continue
            api_key = settings.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
            providers[endpoint.endpoint_id] = build_provider(endpoint, http, api_key, settings)
        return cls(
            settings=settings,
            config=config,
            store=store,
            ledger=Ledger(store, buffer_limit=settings.ledger_buffer),
            keys=KeyRing(store),
            policies=PolicyBook(config.policies, config.default_policy, store),
            http=http,
            providers=providers,
            unavailable=unavailable,
            breaker=_breaker(settings),
            limits=build_limiter(settings.redis_url),
        )

    async def start(self) -> None:
        await self.store.db.open()
        await self.store.migrate()
        now = time.time()
        # One SQLite file serves one gateway process: whatever a previous process
        # left in progress was interrupted. With PostgreSQL, only processes whose
        # heartbeat stopped are considered gone.
        live_after = (
            now + 1
            if not self.settings.multi_process
            else now - 3 * self.settings.heartbeat_seconds
        )
        interrupted = await self.store.mark_interrupted(live_after, now)
        if interrupted:
            log.warning("marked %d calls of a stopped gateway process as interrupted", interrupted)
        if self.settings.multi_process:
            self.changes = ChangeFeed(
                self.store, self.instance_id, self._apply_change,
                live_window=3 * self.settings.heartbeat_seconds,
            )  # fmt: skip
            await self.changes.start()  # listening before others can count on this process
        await self.store.register_instance(self.instance_id, now)
        await self.keys.load()
        token = await self.keys.ensure_admin(self.settings.admin_key, self.config.default_policy)
        if token is not None:
            announce_admin_key(token)
        await self.policies.load()
        self.ledger.start()
        await self.limits.start(self.store.spend_by_key)
        if isinstance(self.breaker, SharedCircuitBreaker):
            self.breaker.start([e.endpoint_id for e in self.config.catalog.endpoints])
        await self._start_providers()
        self._tasks.append(asyncio.create_task(self._maintenance(), name="llmeu-maintenance"))

    async def _start_providers(self) -> None:
        for endpoint_id, provider in list(self.providers.items()):
            try:
                await provider.start()
            except ConfigError as error:
                log.error("endpoint %s is unavailable: %s", endpoint_id, error)
                self.unavailable[endpoint_id] = str(error)
                del self.providers[endpoint_id]

    async def _apply_change(self, change: Change) -> None:
        """Another gateway process revoked a key or replaced a policy."""
        if change.kind == "key":
            await self.keys.reload(change.ident)
        elif change.kind == "policy":
            await self.policies.load()

    async def broadcast(self, kind: str, ident: str) -> Propagation | None:
        """Make a change this process applied hold in every other process (PostgreSQL)."""
        return None if self.changes is None else await self.changes.publish(kind, ident)

    async def _maintenance(self) -> None:
        """Heartbeat, interrupted-call sweep, key refresh and content purge."""
        settings = self.settings
        last_purge = 0.0
        while True:
            await asyncio.sleep(settings.heartbeat_seconds)
            now = time.time()
            try:
                await self.store.heartbeat(self.instance_id, now)
                if settings.multi_process:
                    await self.store.mark_interrupted(now - 3 * settings.heartbeat_seconds, now)
                    if self.changes is not None:
                        await self.changes.start()
                    await self.keys.load()
                    await self.policies.load()
                if now - last_purge >= settings.purge_interval_seconds:
                    purged = await self.store.purge_content(now)
                    if purged:
                        log.info("purged stored content of %d traces", purged)
                    last_purge = now
            except Exception:  # a maintenance round must never end the loop
                log.exception("maintenance round failed")

    async def drain(self, grace: float) -> None:
        """Graceful shutdown: refuse new calls, give those in flight up to `grace` seconds,
        then end the rest — a stream with the error frame, a call not yet answered with a
        503 — recording them `interrupted`, and wait (briefly) until they are recorded."""
        self.accepting = False
        if self.inflight:
            await asyncio.wait(set(self.inflight.values()), timeout=grace)
        if not self.inflight:
            return
        log.warning(
            "shutdown: ending %d calls still in flight after %g s", len(self.inflight), grace
        )
        self.interrupting = True
        ending = set(self.inflight.values())
        for task in ending:
            task.cancel()
        await asyncio.wait(ending, timeout=_INTERRUPT_WAIT)

    async def stop(self) -> None:
        self.accepting = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.ledger.stop()
        if self.changes is not None:
            await self.changes.close()
        with contextlib.suppress(DatabaseError):  # others then stop waiting for this process
            await self.store.unregister_instance(self.instance_id)
        await self.limits.aclose()
        if isinstance(self.breaker, SharedCircuitBreaker):
            await self.breaker.aclose()
        await asyncio.to_thread(self.telemetry.shutdown)
        for provider in self.providers.values():
            await provider.aclose()
        await self.http.aclose()
        await self.store.db.close()
