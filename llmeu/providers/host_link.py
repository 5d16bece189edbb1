"""The gateway's side of the model host: connections, pings, and what a lost host means.

One `HostLink` per gateway process, shared by the local chat and embedding
providers. Each call opens its own connection to the host's socket and
closes it when done, so a call that is abandoned stops host-side at once.
A ping every second says whether the host is up; while it is not (it
exited, or it stopped answering and the keeper is restarting it, or the
keeper itself ended and the launching process is starting another) a call is
refused at once with `LocalModelUnavailable` — a 503 before its first byte,
so the policy's fallback can try another endpoint — and the endpoint shows
as unavailable in `/readyz` and `/v1/platform/endpoints`.

Without a socket from `llmeu serve` (a gateway built in-process), the link
launches a host of its own at start and ends it at close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmeu.config import Settings
from llmeu.errors import (
    ConfigError,
    LocalModelUnavailable,
    UnsupportedByEndpoint,
    UpstreamError,
    UpstreamTimeout,
)
from llmeu.modelhost.launch import HostLimits, LaunchedHost, launch
from llmeu.modelhost.wire import FrameError, read_frame, write_frame

log = logging.getLogger("llmeu")

PING_EVERY = 1.0
PING_TIMEOUT = 5.0
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class HostLink:
    def __init__(
        self,
        socket_path: Path | None,
        *,
        fault: str | None = None,
        limits: HostLimits | None = None,
        launcher: Callable[[HostLimits], LaunchedHost] = launch,
    ):
        self._socket_path = socket_path
        self._fault = fault
        self._limits = limits or HostLimits()
        self._launcher = launcher
        self._launched: LaunchedHost | None = None
        self._users = 0
        self._pinger: asyncio.Task[None] | None = None
        self.up = False
        self.restarts = 0
        self._keeper: int | None = None
        self._earlier_keepers = 0  # the hosts the keepers before this one started
        self._losses = 0
        self.down_reason: str | None = "the local model host has not started"

    async def start(self) -> None:
        """Connect (launching a host first when none was given); a host that cannot start
        makes the local endpoints unavailable, with its one-line reason."""
        self._users += 1
        if self._fault:
            raise ConfigError(self._fault)
        if self._users > 1:
            return
        if self._socket_path is None:
            self._launched = self._launcher(self._limits)
            if self._launched.fault:
                self._fault = self._launched.fault
                raise ConfigError(self._fault)
            self._socket_path = self._launched.socket_path
        if not await self._ping():
            raise ConfigError(f"the local model host does not answer: {self.down_reason}")
        self._pinger = asyncio.create_task(self._keep_pinging(), name="llmeu-model-host-ping")

    async def aclose(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self._pinger is not None:
            self._pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pinger
        if self._launched is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._launched.stop)
            self._launched = None

    def lost(self, why: str) -> None:
        """A call saw the host go: refuse the next calls until a ping answers again."""
        if self.up:
            log.error("the local model host is unavailable: %s", why)
        self.up = False
        self.down_reason = why
        self._losses += 1

    async def _keep_pinging(self) -> None:
        while True:
            await asyncio.sleep(PING_EVERY)
            await self._ping()

    async def _ping(self) -> bool:
        losses = self._losses
        try:
            async with asyncio.timeout(PING_TIMEOUT):
                pong = await self.ask({"op": "ping"}, refuse_when_down=False)
        except (UpstreamError, TimeoutError) as error:
            self.lost(str(error) or "it does not answer pings")
            return False
        if self._losses != losses:  # a call saw the host go after this pong: the next ping says
            return False
        if not self.up:
            log.warning("the local model host is up (pid %s)", pong.get("pid"))
        self.up = True
        self.down_reason = None
        self._count_restarts(pong)
        return True

    def _count_restarts(self, pong: dict[str, Any]) -> None:
        """Hosts started after the first: the keeper's count, plus those of the keepers
        before it when one was launched again (`llmeu.modelhost.launch`)."""
        keeper, restarts = pong.get("keeper"), int(pong.get("restarts", 0))
        if self._keeper is not None and keeper != self._keeper:
            self._earlier_keepers = self.restarts + 1
        self._keeper = keeper if isinstance(keeper, int) else None
        self.restarts = self._earlier_keepers + restarts

    async def connect(
        self, request: dict[str, Any], *, refuse_when_down: bool = True
    ) -> Connection:
        """A connection to the host with `request` sent on it."""
        if refuse_when_down and not self.up:
            raise LocalModelUnavailable(_unavailable(self.down_reason))
        if self._socket_path is None:
            raise LocalModelUnavailable(_unavailable("it has not started"))
        try:
            reader, writer = await asyncio.open_unix_connection(str(self._socket_path))
        except OSError as error:
            self.lost(f"its socket refused the connection ({error.strerror or error})")
            raise LocalModelUnavailable(_unavailable(self.down_reason)) from None
        write_frame(writer, request)
        return reader, writer

    async def ask(
        self, request: dict[str, Any], *, refuse_when_down: bool = True
    ) -> dict[str, Any]:
        """One request, one answer (ping, count, embed); an error answer is raised."""
        reader, writer = await self.connect(request, refuse_when_down=refuse_when_down)
        try:
            answer = await self.read(reader)
        finally:
            writer.close()
        return answer

    async def read(self, reader: asyncio.StreamReader) -> dict[str, Any]:
        """The next frame of an answer; a lost host or an error frame is raised."""
        try:
            frame = await read_frame(reader)
        except (OSError, FrameError) as error:
            frame, lost = None, str(error)
        else:
            lost = "it closed the connection during the call"
        if frame is None:
            self.lost(lost)
            raise LocalModelUnavailable(_unavailable(lost))
        if frame.get("ev") == "error":
            raise host_error(frame)
        return frame


def host_limits(settings: Settings) -> HostLimits:
    return HostLimits(
        settings.local_threads,
        settings.local_call_timeout_seconds,
        settings.local_memory_limit_bytes,
        settings.model_host_test_fault,
    )


def _unavailable(why: str | None) -> str:
    return f"the local model is unavailable: {why}; its host is being restarted"


def host_error(frame: dict[str, Any]) -> UpstreamError:
    """The gateway's error for the host's error frame: the call fails alone."""
    kind, message = frame.get("kind"), str(frame.get("message", ""))
    if kind == "context":
        return UnsupportedByEndpoint(message, param="messages", code="context_length_exceeded")
    if kind == "grammar":  # llama.cpp's parser is stricter than the schema converter
        return UnsupportedByEndpoint(message, param=str(frame.get("param") or "tools"))
    if kind == "timeout":
        return UpstreamTimeout(message, code="local_call_timeout", retryable=False)
    if kind == "memory":
        return UpstreamError(message, code="local_memory_limit")
    return UpstreamError(message)
