"""The host's server: one request per connection on a Unix socket, answered in frames.

Generations take turns on the one chat model (a lock, as llama.cpp holds
one sequence here); a call waiting for its turn is not yet answered, so a
crash meanwhile is still an error before its first byte. While it
generates, the host reads its connection: a `cancel` frame or the client
closing it stops the generation before the next token.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmeu.modelhost.chat_model import CallTimedOut, ChatModel, Finished, Job, PromptTooLong
from llmeu.modelhost.embedding_model import EmbeddingModel
from llmeu.modelhost.wire import FrameError, read_frame, write_frame

_END = object()
_OUT_OF_MEMORY = "the call went past the local memory limit"


@dataclass(frozen=True, slots=True)
class HostConfig:
    socket_path: Path
    threads: int = 2
    context_tokens: int = 0
    """The chat model's context; 0: the model's trained maximum (SmolLM2's is 8,192)."""
    call_timeout: float = 300.0
    """Seconds one generation may run (`--local-call-timeout`)."""
    memory_limit: int = 0
    """Bytes of address space the host may use (`--local-memory-limit`); 0: no ceiling."""
    restarts: int = 0
    """How many hosts the keeper started before this one: reported by `ping`."""
    test_fault: str | None = None
    """The start check's test hook (`llmeu.modelhost.start_check`)."""


class _Refused(Exception):
    def __init__(self, kind: str, message: str, param: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.param = param


class Host:
    def __init__(self, config: HostConfig, chat: ChatModel, embeddings: EmbeddingModel):
        self._config = config
        self._chat = chat
        self._embeddings = embeddings
        self._turn = asyncio.Lock()
        self._generator = ThreadPoolExecutor(1, thread_name_prefix="llmeu-generate")
        self._embedder = ThreadPoolExecutor(1, thread_name_prefix="llmeu-embed")

    async def serve(self, ready: Callable[[], None]) -> None:
        path = self._config.socket_path
        path.unlink(missing_ok=True)
        server = await asyncio.start_unix_server(self._connection, path=str(path))
        os.chmod(path, 0o600)
        ready()
        async with server:
            await server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_frame(reader)
            if request is not None:
                await self._answer(request, reader, writer)
        except (ConnectionError, FrameError):
            pass  # the client went away, or was not one
        except _Refused as refused:
            frame = {"ev": "error", "kind": refused.kind, "message": str(refused)}
            await _send(
                writer, frame if refused.param is None else {**frame, "param": refused.param}
            )
        except MemoryError:
            await _send(writer, {"ev": "error", "kind": "memory", "message": _OUT_OF_MEMORY})
        finally:
            writer.close()

    async def _answer(
        self, request: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        op = request.get("op")
        if op == "ping":
            pong = {"ev": "pong", "pid": os.getpid(), "keeper": os.getppid(),
                    "restarts": self._config.restarts}  # fmt: skip
            await _send(writer, pong)
        elif op == "count":
            prompt = self._chat.prompt_tokens(_messages(request))
            await _send(writer, {"ev": "count", "tokens": len(prompt)})
        elif op == "embed":
            texts = [str(text) for text in request.get("texts") or []]
            loop = asyncio.get_running_loop()
            vectors, tokens = await loop.run_in_executor(
                self._embedder, self._embeddings.embed, texts
            )
            await _send(writer, {"ev": "embeddings", "vectors": vectors, "tokens": tokens})
        elif op == "generate":
            await self._generate(request, reader, writer)
        else:
            raise _Refused("invalid", f"no request `{op}`")

    async def _generate(
        self, request: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        job = self._job(request)
        cancelled = threading.Event()
        watcher = asyncio.create_task(_watch(reader, cancelled))
        try:
            async with self._turn:
                if cancelled.is_set():
                    return
                deadline = time.monotonic() + self._config.call_timeout
                job = dataclasses.replace(job, deadline=deadline)
                await _send(writer, {"ev": "start", "prompt_tokens": len(job.prompt_tokens)})
                await self._stream(job, cancelled, writer)
        finally:
            watcher.cancel()

    def _job(self, request: dict[str, Any]) -> Job:
        prompt = request.get("prompt_tokens") or self._chat.prompt_tokens(_messages(request))
        try:
            max_tokens = self._chat.room(prompt, request.get("max_tokens"))
        except PromptTooLong as error:
            raise _Refused("context", str(error)) from None
        grammar = request.get("grammar")
        if grammar is not None and not self._chat.grammar_compiles(str(grammar)):
            param = str(request.get("grammar_param") or "tools")
            message = f"llama.cpp cannot compile the grammar of the `{param}` schemas"
            raise _Refused("grammar", message, param)
        return Job(list(prompt), max_tokens, tuple(request.get("stop") or ()),
                   dict(request.get("sampling") or {}), request.get("seed"), grammar,
                   plain_possible=bool(request.get("plain_possible")))  # fmt: skip

    async def _stream(
        self, job: Job, cancelled: threading.Event, writer: asyncio.StreamWriter
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()

        def run() -> None:  # the generation thread: every item crosses to the loop
            try:
                for item in self._chat.generate(job, cancelled):
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            except Exception as error:  # the thread's outermost frame: hand it over
                loop.call_soon_threadsafe(queue.put_nowait, error)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        done = loop.run_in_executor(self._generator, run)
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, str) and cancelled.is_set():
                    continue  # the end frame still goes: it counts the tokens made
                with contextlib.suppress(ConnectionError):
                    await _send(writer, _frame(item))
        finally:
            cancelled.set()
            await done


def _frame(item: object) -> dict[str, Any]:
    if isinstance(item, str):
        return {"ev": "text", "text": item}
    if isinstance(item, Finished):
        return {"ev": "end", "reason": item.reason, "tokens": item.completion_tokens}
    kind = "timeout" if isinstance(item, CallTimedOut) else "failed"
    if isinstance(item, MemoryError):
        kind, item = "memory", _OUT_OF_MEMORY
    return {"ev": "error", "kind": kind, "message": f"local generation failed: {item}"}


async def _send(writer: asyncio.StreamWriter, frame: dict[str, Any]) -> None:
    write_frame(writer, frame)
    await writer.drain()


async def _watch(reader: asyncio.StreamReader, cancelled: threading.Event) -> None:
    """Cancel on a `cancel` frame or when the client closes its connection."""
    try:
        while (frame := await read_frame(reader)) is not None and frame.get("op") != "cancel":
            pass
    except (ConnectionError, FrameError):
        pass
    cancelled.set()


def _messages(request: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": str(m.get("role", "user")), "content": str(m.get("content", ""))}
        for m in request.get("messages") or []
    ]


def announce_ready() -> None:
    """The keeper waits for this line on the host's standard output."""
    sys.stdout.write("ready\n")
    sys.stdout.flush()
