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
from typing import Any

from llmeu.api.auth import KeyRing, announce_admin_key
from llmeu.api.inference import Calls
from llmeu.api.policies import PolicyBook
from llmeu.api.routes.platform import Platform
from llmeu.api.upstreams import Upstreams
from llmeu.config import Settings
from llmeu.errors import ConfigError, DatabaseError
from llmeu.ledger.notify import Change, ChangeFeed, Propagation
from llmeu.ledger.opening import open_database
from llmeu.ledger.store import Store
from llmeu.ledger.writer import Ledger
from llmeu.limits import Limiter, build_limiter
from llmeu.limits.shared_breaker import SharedCircuitBreaker
from llmeu.observability.hooks import Observers
from llmeu.observability.telemetry import Telemetry
from llmeu.providers.base import Provider
from llmeu.providers.table import ProviderContext, build_provider, missing_credentials
from llmeu.providers.transport import HttpClient
from llmeu.routing.breaker import CircuitBreaker
from llmeu.routing.catalog import EndpointKind
from llmeu.routing.config_file import GatewayConfig
from llmeu.routing.load import load_config

log = logging.getLogger("llmeu")

_SETTLE_WAIT = 5.0


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


class Gateway:
    def __init__(self, settings: Settings, config: GatewayConfig, store: Store):
        """Everything that needs no I/O; `build` validates the configuration first."""
        self.settings = settings
        self.config = config
        self.store = store
        self.instance_id = "gw_" + secrets.token_hex(6)
        self.started_at = time.time()
        self.ledger = Ledger(store, buffer_limit=settings.ledger_buffer)
        self.keys = KeyRing(store)
        self.policies = PolicyBook(config.policies, config.default_policy, store)
        self.http = HttpClient()
        self.breaker = _breaker(settings)
        self.limits: Limiter = build_limiter(
            settings.redis_url, redis_timeout=settings.redis_timeout_seconds
        )
        self.upstreams = Upstreams(config.catalog, *self._providers(), breaker=self.breaker)
        self.telemetry = Telemetry.build(
            settings,
            config.catalog,
            ledger=self.ledger,
            breaker=self.breaker,
            limiter=self.limits.state,
        )
        self.observers = Observers(self.telemetry.observers)
        self.calls = Calls(
            keys=self.keys, policies=self.policies, upstreams=self.upstreams, ledger=self.ledger,
            limits=self.limits, observers=self.observers,
            instance_id=self.instance_id, max_body_bytes=settings.max_body_bytes,
        )  # fmt: skip
        self.platform = Platform(self.keys, self.policies, store, self.upstreams, self.broadcast)
        self.changes: ChangeFeed | None = None  # with a shared ledger: changes others apply
        self.loaded = False
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    def build(cls, settings: Settings) -> Gateway:
        config = load_config(
            settings.config_file, host=socket.gethostname(), local_country=settings.local_country
        )
        return cls(settings, config, Store(open_database(settings.effective_database_url)))

    def _providers(self) -> tuple[dict[str, Provider], dict[str, str]]:
        settings = self.settings
        unavailable = missing_credentials(self.config.catalog, settings.environ)
        context = ProviderContext(self.http, settings.environ, settings.local_threads)
        providers: dict[str, Provider] = {}
        for endpoint in self.config.catalog.endpoints:
            if endpoint.endpoint_id in unavailable:
                continue
            if endpoint.kind is EndpointKind.LOCAL and not settings.load_local_models:
                unavailable[endpoint.endpoint_id] = "local models are disabled (--no-local)"
                continue
            providers[endpoint.endpoint_id] = build_provider(endpoint, context)
        return providers, unavailable

    async def start(self) -> None:
        await self.store.db.open()
        await self.store.migrate()
        now = time.time()
        settings = self.settings
        shared = self.store.shared
        # A ledger of one process: whatever a previous process left in progress was
        # interrupted. A shared one: only processes whose heartbeat stopped are gone.
        live_after = now + 1 if not shared else now - 3 * settings.heartbeat_seconds
        interrupted = await self.store.mark_interrupted(live_after, now)
        if interrupted:
            log.warning("marked %d calls of a stopped gateway process as interrupted", interrupted)
        if self.store.db.dialect.change_notices:
            self.changes = ChangeFeed(
                self.store, self.instance_id, self._apply_change,
                live_window=3 * settings.heartbeat_seconds,
            )  # fmt: skip
            await self.changes.start()  # listening before others can count on this process
        await self.store.register_instance(self.instance_id, now)
        await self.keys.load()
        token = await self.keys.ensure_admin(settings.admin_key, self.config.default_policy)
        if token is not None:
            announce_admin_key(token)
        await self.policies.load()
        self.ledger.start()
        await self.limits.start(self.store.spend_by_key)
        if isinstance(self.breaker, SharedCircuitBreaker):
            self.breaker.start([e.endpoint_id for e in self.config.catalog.endpoints])
        await self._start_providers()
        self._tasks.append(asyncio.create_task(self._maintenance(), name="llmeu-maintenance"))
        self.loaded = True

    async def _start_providers(self) -> None:
        upstreams = self.upstreams
        for endpoint_id, provider in list(upstreams.providers.items()):
            try:
                await provider.start()
            except ConfigError as error:
                log.error("endpoint %s is unavailable: %s", endpoint_id, error)
                upstreams.unavailable[endpoint_id] = str(error)
                del upstreams.providers[endpoint_id]

    async def _apply_change(self, change: Change) -> None:
        """Another gateway process revoked a key or replaced a policy."""
        if change.kind == "key":
            await self.keys.reload(change.ident)
        elif change.kind == "policy":
            await self.policies.load()

    async def broadcast(self, kind: str, ident: str) -> Propagation | None:
        """Make a change this process applied hold in every other process (shared ledger)."""
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
                if self.store.shared:
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

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Alive, and the state an operator wants at a glance (no key, no tenant data)."""
        ledger = self.ledger
        body = {
            "status": "ok" if self.calls.accepting else "shutting_down",
            "ledger": "ok" if ledger.healthy else "degraded",
            "ledger_queue": ledger.depth,
            "limits": self.limits.state.status,
            "instance_id": self.instance_id,
        }
        return self.calls.accepting, body

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready to serve: started (configuration and local models loaded), accepting calls,
        and the ledger's database answering."""
        checks = {
            "configuration": "ok" if self.loaded else "loading",
            "ledger": "ok" if self.ledger.healthy and self.loaded else "unavailable",
            "accepting": "ok" if self.calls.accepting else "shutting_down",
        }
        ready = all(value == "ok" for value in checks.values())
        # Limits that cannot be checked degrade the gateway but leave it serving (as each
        # policy's `limits_fail` says), so they do not make it unready.
        body = {"status": "ready" if ready else "not_ready", **checks}
        return ready, {**body, "limits": self.limits.state.status}

    async def stop(self) -> None:
        """Refuse new calls, let those still in flight record how they ended, then stop."""
        self.calls.accepting = False
        await self.calls.settle_inflight(_SETTLE_WAIT)
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
        for provider in self.upstreams.providers.values():
            await provider.aclose()
        await self.http.aclose()
        await self.store.db.close()
