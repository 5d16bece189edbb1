"""A call leaves no reference cycles behind: what it made is freed by reference counting
as it ends, so the collector has no garbage of a call's to find, and its first generation
may hold many objects (`llmeu.server.runner._tune_collector`). Every route, streamed or
not, through the ASGI interface (here without llmeu's own server, so a task watches each
call's connection); and the ways a call fails or is cut short. A failure is where a cycle
hides: an exception kept by an object its traceback's frames refer to. Under an upstream
outage every call fails, and each such cycle would keep the whole call, its prompt
included, until the collector came round."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import types
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from llmeu.api.app import App, create_app
from llmeu.api.http.route import Route
from llmeu.config import Settings
from llmeu.server.connection_guard import ConnectionGuard, ConnectionLimits
from llmeu.server.http_protocol import protocol_factory
from tests.api.test_open_row import CALLS
from tests.support.native_upstreams import NativeFakes
from tests.support.processes import ADMIN_KEY, FakeUpstream, config_yaml, fake_endpoint


def _ours(thing: object) -> str | None:
    """What names a piece of garbage as llmeu's: its type, or the code it was running."""
    module = getattr(type(thing), "__module__", "") or ""
    if module.startswith("llmeu"):
        return type(thing).__qualname__
    code = None
    if isinstance(thing, types.FrameType):
        code = thing.f_code
    elif isinstance(thing, types.CoroutineType | types.GeneratorType | types.AsyncGeneratorType):
        code = getattr(thing, "cr_code", None) or getattr(thing, "gi_code", None)
        code = code or getattr(thing, "ag_code", None)
    if code is not None and "/llmeu/" in code.co_filename:
        return f"{type(thing).__name__} of {code.co_name}"
    return None


async def _cyclic_garbage_of(app: App, call: Callable[[], Awaitable[None]]) -> Counter[str]:
    """llmeu's objects that ten runs of `call` (after one to warm caches and the pool) left
    in reference cycles."""
    await call()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()
    try:
        for _ in range(10):
            await call()
        await app.gateway.ledger.flush(10)
        gc.collect()
        return Counter(name for thing in gc.garbage if (name := _ours(thing)) is not None)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def _started(settings: Settings) -> AsyncIterator[App]:
    """The app on `settings`, started, and stopped after the test (a fixture's body)."""
    application = create_app(settings)
    await application.gateway.start()
    yield application
    await application.gateway.stop()


def _admin_client(app: App) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://gateway",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
    )


async def _cancelled(app: App) -> int:
    """How many traces the ledger holds as `cancelled` (a client hung up)."""
    page = await app.gateway.store.list_traces(
        filters={"status": "cancelled"}, since=None, until=None, limit=20, cursor=None,
        key_id=None,
    )  # fmt: skip
    return len(page.traces)


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_a_call_leaves_no_cyclic_garbage_of_its_own(
    app: App, client: httpx.AsyncClient, call: tuple[str, dict[str, Any], dict[str, str]]
) -> None:
    path, body, headers = call

    async def served() -> None:
        response = await client.post(path, json=body, headers=headers)
        assert response.status_code == 200, response.text

    found = await _cyclic_garbage_of(app, served)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


# The platform API and the gateway's own routes, answered and refused (an error answer
# comes from an exception, the usual place for a cycle).
OTHER_ROUTES: list[tuple[str, str, dict[str, Any] | None, int]] = [
    ("GET", "/v1/platform/traces?limit=5", None, 200),
    ("GET", "/v1/platform/usage?group_by=model", None, 200),
    ("GET", "/v1/platform/endpoints", None, 200),
    ("GET", "/v1/platform/policies", None, 200),
    ("POST", "/v1/platform/keys", {"name": "cycles"}, 201),
    ("GET", "/v1/models", None, 200),
    ("GET", "/metrics", None, 200),
    ("GET", "/openapi.json", None, 200),
    ("GET", "/console", None, 200),
    ("GET", "/v1/platform/traces/trc_0123456789abcdef01234567", None, 404),
    ("GET", "/v1/platform/usage?group_by=colour", None, 400),
    ("DELETE", "/v1/chat/completions", None, 405),
    ("GET", "/v1/no-such-route", None, 404),
]


@pytest.mark.parametrize(
    "route",
    OTHER_ROUTES,
    ids=[f"{method} {path} {status}" for method, path, _, status in OTHER_ROUTES],
)
async def test_a_platform_call_leaves_no_cyclic_garbage_of_its_own(
    app: App, client: httpx.AsyncClient, route: tuple[str, str, dict[str, Any] | None, int]
) -> None:
    method, path, body, status = route

    async def answered() -> None:
        response = await client.request(method, path, json=body)
        assert response.status_code == status, response.text

    found = await _cyclic_garbage_of(app, answered)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


async def test_a_bug_is_a_logged_500_and_leaves_no_cyclic_garbage_of_its_own(
    app: App, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception no layer expected: an OpenAI-shaped 500, logged with its traceback."""

    async def buggy(request: object) -> None:
        raise RuntimeError("a bug")

    app._exact[("GET", "/v1/models")] = Route("GET", "/v1/models", buggy)

    async def failed() -> None:
        response = await client.get("/v1/models")
        assert response.status_code == 500, response.text
        assert response.json()["error"]["type"] == "api_error"

    found = await _cyclic_garbage_of(app, failed)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"
    [*_, logged] = [
        r for r in caplog.records if r.getMessage() == "unhandled error on GET /v1/models"
    ]
    assert logged.exc_info is not None and isinstance(logged.exc_info[1], RuntimeError)


def _chat(model: str, content: str = "hi", **fields: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **fields}


# What the call asks, and the status it gets (a stream that breaks has begun with 200).
FAILURES: dict[str, tuple[str, dict[str, Any], int]] = {
    "upstream unavailable": ("/v1/chat/completions", _chat("down-model"), 503),
    "fallback serves": ("/v1/chat/completions", _chat("fallback-model"), 200),
    "upstream refuses the request": ("/v1/chat/completions", _chat("fake-model", "[[fault=echo]]"), 400),
    "no first token in time": ("/v1/chat/completions", _chat("slow-model", stream=True), 504),
    "stream reset midway": (
        "/v1/chat/completions", _chat("fake-model", "[[fault=reset_mid_stream]]", stream=True), 200,
    ),
    "malformed stream": (
        "/v1/chat/completions", _chat("fake-model", "[[fault=malformed_sse]]", stream=True), 200,
    ),
    "error event in the stream": (
        "/v1/chat/completions", _chat("fake-model", "[[fault=error_event]]", stream=True), 200,
    ),
    "invalid JSON in the stream": (
        "/v1/chat/completions", _chat("fake-model", "[[fault=invalid_json]]", stream=True), 200,
    ),
    "invalid request": ("/v1/chat/completions", {"model": "fake-model", "messages": "hi"}, 400),
    "unknown model": ("/v1/chat/completions", _chat("no-such-model"), 404),
    "messages, upstream unavailable": (
        "/v1/messages", {**_chat("down-model"), "max_tokens": 8}, 503,
    ),
    "responses stream reset midway": (
        "/v1/responses",
        {"model": "fake-model", "input": "[[fault=reset_mid_stream]]", "stream": True},
        200,
    ),
}  # fmt: skip


@pytest.fixture
async def failing_app(tmp_path: Path, fake_upstream: FakeUpstream) -> AsyncIterator[App]:
    """Endpoints that fail: one always (`down-model`), one always but with a healthy
    fallback (`fallback-model`), one that never sends its first token in time
    (`slow-model`). No circuit opens, so every call meets its failure."""
    config = tmp_path / "config.yaml"
    config.write_text(
        config_yaml(
            fake_endpoint("fakeprov-fr-a", fake_upstream),
            fake_endpoint(
                "fakeprov-fr-down", fake_upstream, model="fake;fault=status_503",
                aliases=("down-model", "fallback-model"), priority=1,
            ),
            fake_endpoint(
                "fakeprov-fr-b", fake_upstream, aliases=("fallback-model",), priority=2,
            ),
            fake_endpoint(
                "fakeprov-fr-slow", fake_upstream, model="fake;fault=stall_first;stall=5",
                aliases=("slow-model",), timeouts={"first_token": 0.05},
            ),
        )
    )  # fmt: skip
    settings = Settings(
        data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY, load_local_models=False,
        breaker_threshold=1000,  # every call tries the failing upstream: no open circuit
    )  # fmt: skip
    async for application in _started(settings):
        yield application


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
async def test_a_call_that_fails_leaves_no_cyclic_garbage_of_its_own(
    failing_app: App, failure: tuple[str, dict[str, Any], int]
) -> None:
    path, body, status = failure
    async with _admin_client(failing_app) as client:

        async def failed() -> None:
            response = await client.post(path, json=body)
            assert response.status_code == status, response.text
            if status == 200 and body.get("stream"):
                assert b"error" in response.content, "the stream was meant to fail"

        found = await _cyclic_garbage_of(failing_app, failed)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


async def test_a_call_whose_client_hangs_up_leaves_no_cyclic_garbage_of_its_own(
    app: App,
) -> None:
    """The client goes away after the stream's first frame, as ASGI tells it."""
    body = _chat("fake-model", "[[chunks=50;delay=20]]", stream=True)

    async def hung_up() -> None:
        first_frame = asyncio.Event()
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if not sent:
                sent.append({})
                return {
                    "type": "http.request",
                    "body": json.dumps(body).encode(),
                    "more_body": False,
                }
            await first_frame.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                first_frame.set()

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/v1/chat/completions",
            "raw_path": b"/v1/chat/completions", "query_string": b"", "root_path": "",
            "headers": [
                (b"host", b"gateway"), (b"content-type", b"application/json"),
                (b"authorization", f"Bearer {ADMIN_KEY}".encode()),
            ],
            "client": ("127.0.0.1", 1), "server": ("gateway", 80),
        }  # fmt: skip
        await asyncio.wait_for(app(scope, receive, send), 10)
        assert first_frame.is_set()

    found = await _cyclic_garbage_of(app, hung_up)
    assert await _cancelled(app) == 11, "every hung-up call is recorded as cancelled"
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


@pytest.fixture
async def served_app(app: App) -> AsyncIterator[str]:
    """The app behind llmeu's own HTTP server (its protocol and request cycle), in this
    process, on a port of 127.0.0.1: its base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http=protocol_factory(ConnectionGuard(ConnectionLimits())),  # type: ignore[arg-type]
        lifespan="off", log_config=None, access_log=False, loop="none",
    )  # fmt: skip
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        await asyncio.sleep(0.01)
    host, port = listener.getsockname()
    yield f"http://{host}:{port}"
    server.should_exit = True
    await asyncio.wait_for(serving, 10)
    listener.close()


@pytest.mark.parametrize("stream", [False, True], ids=["chat", "chat stream"])
async def test_a_call_through_llmeus_server_leaves_no_cyclic_garbage_of_its_own(
    app: App, served_app: str, stream: bool
) -> None:
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=served_app, headers=headers) as client:

        async def served() -> None:
            response = await client.post(
                "/v1/chat/completions", json=_chat("fake-model", stream=stream)
            )
            assert response.status_code == 200, response.text

        found = await _cyclic_garbage_of(app, served)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


async def test_a_hang_up_through_llmeus_server_leaves_no_cyclic_garbage_of_its_own(
    app: App, served_app: str
) -> None:
    """The client closes its connection after the stream's first frame: llmeu's server
    tells the call at once (its hang-up hook, no task watching)."""
    body = json.dumps(_chat("fake-model", "[[chunks=50;delay=20]]", stream=True)).encode()
    host, port = served_app.removeprefix("http://").split(":")
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\n"
        f"authorization: Bearer {ADMIN_KEY}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()

    async def hung_up() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head + body)
        received = b""
        while b"data: " not in received:
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            assert chunk, "the stream ended before its first frame"
            received += chunk
        writer.close()
        await writer.wait_closed()

    async def hung_up_and_recorded() -> None:
        before = await _cancelled(app)
        await hung_up()
        for _ in range(500):  # the call learns of the hang-up, ends and is recorded
            await asyncio.sleep(0.01)
            if await _cancelled(app) > before:
                return
        raise AssertionError("the hung-up call was not recorded as cancelled")

    found = await _cyclic_garbage_of(app, hung_up_and_recorded)
    assert await _cancelled(app) == 11
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


NATIVE_FAILURES: dict[str, tuple[dict[str, Any], str | None]] = {
    **{
        f"{kind}: throttled, fallback serves": (_chat(f"{kind}-fallback"), None)
        for kind in ("azure", "bedrock", "vertex", "vertex-claude")
    },
    **{
        f"{model}: stream broken by {fault}": (
            _chat(model, f"hi [[fault={fault};chunks=4]]", stream=True), "error",
        )
        for model, fault in [
            ("azure-model", "error_event"), ("bedrock-model", "crc"),
            ("bedrock-model", "truncated"), ("vertex-model", "malformed"),
            ("vertex-claude-model", "overloaded_event"),
        ]
    },
    "bedrock: stream throttled, fallback serves": (
        _chat("bedrock-stream-fallback", stream=True), None,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def native_fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NativeFakes]:
    fakes = NativeFakes.start(tmp_path_factory.mktemp("native"))
    yield fakes
    fakes.stop()


@pytest.fixture
async def native_app(tmp_path: Path, native_fakes: NativeFakes) -> AsyncIterator[App]:
    """Azure OpenAI, Bedrock, Vertex and Claude on Vertex, each with its own decoder and
    error mapping (`llmeu.providers`); no circuit opens."""
    config = tmp_path / "config.yaml"
    config.write_text(native_fakes.config())
    settings = Settings(
        data_dir=tmp_path, config_file=config, admin_key=ADMIN_KEY, load_local_models=False,
        breaker_threshold=1000, environ=native_fakes.environ(),
    )  # fmt: skip
    async for application in _started(settings):
        yield application


@pytest.mark.parametrize("failure", NATIVE_FAILURES.values(), ids=NATIVE_FAILURES.keys())
async def test_a_native_upstreams_failure_leaves_no_cyclic_garbage_of_its_own(
    native_app: App, failure: tuple[dict[str, Any], str | None]
) -> None:
    body, expected = failure
    async with _admin_client(native_app) as client:

        async def failed() -> None:
            response = await client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            if expected is not None:
                assert expected.encode() in response.content, "the stream was meant to fail"

        found = await _cyclic_garbage_of(native_app, failed)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"


CACHING = {"allow_classes": ["on_premise", "eu_sovereign"], "max_retention": "P0D",
           "store_content": "P1D", "cache": {"ttl": "PT1H"}}  # fmt: skip


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_a_call_answered_from_the_cache_leaves_no_cyclic_garbage_of_its_own(
    app: App, client: httpx.AsyncClient, call: tuple[str, dict[str, Any], dict[str, str]]
) -> None:
    """After the first (a miss, whose answer is kept), every call is a hit."""
    assert (await client.put("/v1/platform/policies/cycles-cached", json=CACHING)).is_success
    made = await client.post("/v1/platform/keys", json={"name": "c", "policy_id": "cycles-cached"})
    path, body, headers = call
    headers = {**headers, "authorization": f"Bearer {made.json()['key']}"}

    async def served() -> None:
        response = await client.post(path, json=body, headers=headers)
        assert response.status_code == 200, response.text

    found = await _cyclic_garbage_of(app, served)
    assert not found, f"cyclic garbage of llmeu's: {dict(found)}"
    assert (await app.gateway.answers.stats())["hits"]["exact"] == 10
