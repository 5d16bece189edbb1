"""Change notices between gateway processes over Redis publish/subscribe.

For a ledger whose database has no notices of its own (SQLite, shared by
several worker processes on one machine): a revoked key, a replaced policy or
a reloaded configuration reaches the other processes at once, as it does over
PostgreSQL's LISTEN/NOTIFY. The subscription has its own connection with no
read timeout (it waits for notices by design); sending gives up quickly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from llmeu.errors import SharedStateUnavailable
from llmeu.limits.redis import connect

log = logging.getLogger("llmeu.limits")

CHANNEL = "llmeu:changes"


class _Subscription:
    def __init__(self, client: aioredis.Redis, pubsub: aioredis.client.PubSub):
        self._client = client
        self._pubsub = pubsub
        self.task: asyncio.Task[None] | None = None

    def is_closed(self) -> bool:
        return self.task is None or self.task.done()

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        with contextlib.suppress(RedisError, OSError):
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
            await self._client.aclose()


class RedisNotices:
    def __init__(self, url: str, *, timeout: float):
        self._url = url
        self._timeout = timeout
        self._sender = connect(url, timeout)

    async def subscribe(self, listener: Callable[[str], None]) -> _Subscription:
        client = aioredis.Redis.from_url(self._url, socket_connect_timeout=self._timeout)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(CHANNEL)
        except (RedisError, OSError) as error:
            await client.aclose()
            raise SharedStateUnavailable(f"cannot subscribe to change notices: {error}") from None
        subscription = _Subscription(client, pubsub)
        subscription.task = asyncio.create_task(self._read(pubsub, listener))
        return subscription

    async def _read(self, pubsub: aioredis.client.PubSub, listener: Callable[[str], None]) -> None:
        """Until the connection breaks; the feed subscribes again at its next round."""
        try:
            async for message in pubsub.listen():
                data = message.get("data")
                if isinstance(data, bytes):
                    listener(data.decode("utf-8", "replace"))
        except (RedisError, OSError) as error:
            log.warning("change notices from Redis interrupted: %s", error)

    async def send(self, payload: str) -> None:
        try:
            await self._sender.publish(CHANNEL, payload)
        except (RedisError, OSError) as error:
            raise SharedStateUnavailable(f"cannot send a change notice: {error}") from None

    async def aclose(self) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._sender.aclose()
