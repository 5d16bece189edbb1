"""The host's start check, and the one line that says why a host could not start.

Before the host says it is ready it loads both models and runs one tiny
generation and one embedding: a llama.cpp built for instructions this CPU
does not have faults there, at start, not on a tenant's first call.

`LLMEU_MODEL_HOST_FAULT=start` (read by the settings, passed down as
`--test-fault start`) is a test hook, acted on only here: the host faults
(SIGSEGV) after its start check, as a wrong build would. It exists so the
gateway's handling of a faulting host can be tested without a broken build;
it does nothing else.
"""

from __future__ import annotations

import os
import resource
import signal
import threading

from llmeu.modelhost.chat_model import ChatModel, Finished, Job
from llmeu.modelhost.embedding_model import EmbeddingModel

REBUILD = (
    "CMAKE_ARGS='-DGGML_NATIVE=ON' pip install --force-reinstall --no-cache-dir "
    "--no-binary llama-cpp-python 'llama-cpp-python=={version}'"
)
_NATIVE_FAULTS = {signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT}


def limit_memory(limit: int) -> None:
    """The host's address-space ceiling: an allocation past it fails (a `MemoryError`, or
    llama.cpp's own failure) instead of taking the machine's memory."""
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def check(chat: ChatModel, embeddings: EmbeddingModel, test_fault: str | None = None) -> None:
    """One tiny generation and one embedding; a wrong build faults here."""
    prompt = chat.prompt_tokens([{"role": "user", "content": "Hi"}])
    job = Job(prompt, 2, (), {"temp": 0.0})
    ends = [item for item in chat.generate(job, threading.Event()) if isinstance(item, Finished)]
    if not ends:
        raise RuntimeError("the start-check generation did not finish")
    embeddings.embed(["start check"])
    if test_fault == "start":
        os.kill(os.getpid(), signal.SIGSEGV)


def describe_fault(returncode: int, last_line: str) -> str:
    """Why a host ended before it was ready, and what to do, in one line."""
    if returncode < 0 and -returncode in _NATIVE_FAULTS:
        name = signal.Signals(-returncode).name
        return (
            f"the local model host crashed with {name} in its start check: llama.cpp was "
            "most likely built for another CPU than this one; rebuild it for this CPU: "
            + REBUILD.format(version=_llama_version())
        )
    if returncode < 0:
        return f"the local model host was ended by {signal.Signals(-returncode).name} at start"
    detail = last_line.strip() or f"exit status {returncode}"
    return f"the local model host could not start: {detail}"


def _llama_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama-cpp-python")
    except PackageNotFoundError:
        return "<version>"
