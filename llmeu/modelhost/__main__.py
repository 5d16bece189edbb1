"""`python -m llmeu.modelhost`: the keeper, or with `--serve` the host it starts."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from llmeu.modelhost.host import HostConfig


def _config(argv: list[str] | None) -> tuple[HostConfig, bool]:
    parser = argparse.ArgumentParser(prog="python -m llmeu.modelhost")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context-tokens", type=int, default=0)
    parser.add_argument("--call-timeout", type=float, default=300.0)
    parser.add_argument("--memory-limit", type=int, default=0)
    parser.add_argument("--restarts", type=int, default=0)
    parser.add_argument("--test-fault", choices=["start"], help="a test hook: fault at start")
    parser.add_argument("--serve", action="store_true", help="be the host (the keeper's child)")
    args = parser.parse_args(argv)
    config = HostConfig(args.socket, args.threads, args.context_tokens, args.call_timeout,
                        args.memory_limit, args.restarts, args.test_fault)  # fmt: skip
    return config, args.serve


def host_main(config: HostConfig) -> int:
    from llmeu.modelhost.chat_model import ChatModel
    from llmeu.modelhost.embedding_model import EmbeddingModel
    from llmeu.modelhost.host import Host, announce_ready
    from llmeu.modelhost.start_check import check, limit_memory

    limit_memory(config.memory_limit)
    try:
        chat = ChatModel("SmolLM2-135M-Instruct", threads=config.threads,
                         context_tokens=config.context_tokens)  # fmt: skip
        embeddings = EmbeddingModel(threads=config.threads)
        check(chat, embeddings, config.test_fault)
    except (ImportError, OSError, ValueError, RuntimeError, MemoryError) as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 3
    asyncio.run(Host(config, chat, embeddings).serve(announce_ready))
    return 0


def main(argv: list[str] | None = None) -> int:
    config, serve = _config(argv)
    if serve:
        return host_main(config)
    from llmeu.modelhost.keeper import Keeper

    return Keeper(config).run()


if __name__ == "__main__":
    sys.exit(main())
