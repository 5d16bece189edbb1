"""Both stores: bounded, least recently used first, expiring, removable by tag; Redis encrypted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from llmeu.cache.entry import Entry, Streamed, encode_entry
from llmeu.cache.memory_store import MemoryStore
from llmeu.cache.redis_store import PREFIX, RedisStore
from llmeu.cache.sealing import Sealer
from llmeu.cache.similarity import normalized
from llmeu.cache.stores import Placed, Store, policy_tag, subject_tag
from llmeu.calls.output import Delta
from llmeu.errors import ServiceUnavailable
from tests.support.processes import free_port

REDIS_URL = "redis://127.0.0.1:6379/11"  # a database of its own: the machine's Redis is shared
SECRET = "a test secret of more than thirty-two characters"
HOUR = 3600.0


def entry(text: str, trace: str = "trc_1") -> Entry:
    return Entry(trace, "ep", Streamed([Delta(content=text)], "stop"))


SIZE = len(encode_entry(entry("x" * 100)))


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    bound = 3 * SIZE + SIZE // 2  # three entries of `x` * 100 fit, a fourth does not
    if request.param == "memory":
        built: Store = MemoryStore(bound)
    else:
        redis_store = RedisStore(REDIS_URL, Sealer(SECRET), bound, timeout=1.0)
        await redis_store.clear()
        built = redis_store
    yield built
    await built.clear()
    await built.aclose()


async def test_what_is_put_is_got_until_it_expires(store: Store) -> None:
    await store.put("k", entry("hello"), 0.2, [], None)
    assert await store.get("k") == entry("hello")
    assert await store.get("other") is None
    await asyncio.sleep(0.35)
    assert await store.get("k") is None


async def test_past_the_bound_the_least_recently_used_goes(store: Store) -> None:
    for name in "abc":
        await store.put(name, entry("x" * 100, name), HOUR, [], None)
    assert await store.get("a") is not None  # used: b is now the least recently used
    await store.put("d", entry("x" * 100, "d"), HOUR, [], None)
    found = {name: await store.get(name) is not None for name in "abcd"}
    assert found == {"a": True, "b": False, "c": True, "d": True}
    size = await store.size()
    assert size.entries == 3 and size.bytes <= size.max_bytes
    assert store.evictions == 1


async def test_a_tag_removes_exactly_its_entries(store: Store) -> None:
    await store.put("a", entry("a"), HOUR, [policy_tag("p"), subject_tag("alice")], None)
    await store.put("b", entry("b"), HOUR, [policy_tag("p"), subject_tag("bob")], None)
    await store.put("c", entry("c"), HOUR, [policy_tag("q")], None)
    assert await store.drop(subject_tag("alice")) == 1
    assert [await store.get(k) is not None for k in "abc"] == [False, True, True]
    assert await store.drop(policy_tag("p")) == 1
    assert [await store.get(k) is not None for k in "abc"] == [False, False, True]
    assert await store.clear() == 1
    assert await store.get("c") is None


async def test_the_nearest_prompt_of_the_scope_above_the_threshold(store: Store) -> None:
    east, north_east = normalized([1.0, 0.0]), normalized([1.0, 0.2])
    await store.put("east", entry("east"), HOUR, [], Placed("s", east))
    await store.put(
        "north", entry("north"), HOUR, [subject_tag("x")], Placed("s", normalized([0.0, 1.0]))
    )
    assert await store.nearest("s", north_east, 0.95) == entry("east")
    assert await store.nearest("s", north_east, 0.999) is None  # a near miss is no hit
    assert await store.nearest("other scope", east, 0.5) is None
    await store.drop(subject_tag("x"))
    assert await store.nearest("s", normalized([0.0, 1.0]), 0.95) is None


@pytest.mark.redis
async def test_redis_holds_nothing_readable() -> None:
    store = RedisStore(REDIS_URL, Sealer(SECRET), 1 << 20, timeout=1.0)
    await store.clear()
    secret_text = "the prompt nobody may read"
    await store.put("policy-p|key-k|hello", entry(secret_text), HOUR, [subject_tag("alice")],
                    Placed("scope", normalized([0.3, 0.4])))  # fmt: skip
    names = [n async for n in store.redis.scan_iter(match=PREFIX + "*")]
    values = b""
    for name in names:
        kind = await store.redis.type(name)
        if kind == b"string":
            values += await store.redis.get(name)
        elif kind == b"hash":
            values += b"".join(
                v for pair in (await store.redis.hgetall(name)).items() for v in pair
            )
        elif kind == b"set":
            values += b"".join(await store.redis.smembers(name))
    readable = b"".join(names) + values
    for leak in (secret_text.encode(), b"alice", b"policy-p", b"key-k", b"hello"):
        assert leak not in readable
    other = RedisStore(REDIS_URL, Sealer("another secret of more than thirty-two chars"),
                       1 << 20, timeout=1.0)  # fmt: skip
    assert await other.get("policy-p|key-k|hello") is None  # another secret reads nothing
    await other.aclose()
    await store.clear()
    await store.aclose()


async def test_a_redis_that_does_not_answer_is_a_miss_and_an_admin_error() -> None:
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", Sealer(SECRET), 1 << 20, timeout=0.2)
    assert await store.get("k") is None
    await store.put("k", entry("x"), HOUR, [], None)  # bypassed: no wait, no error
    assert store.errors == 1
    with pytest.raises(ServiceUnavailable) as refused:
        await store.drop(subject_tag("alice"))
    assert refused.value.code == "cache_unavailable"
    await store.aclose()


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(Exception, match="at least 32 characters"):
        Sealer("short")


async def test_the_purge_sweeps_what_expired(store: Store) -> None:
    await store.put("brief", entry("brief"), 0.1, [policy_tag("p")], None)
    await store.put("long", entry("long"), HOUR, [policy_tag("p")], None)
    await asyncio.sleep(0.25)
    await store.purge()  # in memory it removes `brief`; Redis expired it by itself
    assert await store.get("brief") is None
    assert await store.get("long") == entry("long")
    assert await store.drop(policy_tag("p")) == 1  # what expired is no longer counted
