"""`llmeu cache stats|clear`: the answer cache of a running gateway (admin key).

    llmeu cache stats     where it lives, its size and bound, hits and misses
    llmeu cache clear     empty it, in every gateway process

Through the platform API, `GET` and `DELETE /v1/platform/cache`. Size is the
whole cache's when it lives in Redis (shared by every process), the answering
process's otherwise; hits and misses are always the answering process's
(`/metrics` of every process adds them up).
"""

from __future__ import annotations

import argparse
from typing import Any

from llmeu.cli.platform_api import PlatformClient, add_connection_options, print_json, runner


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("cache", help="the answer cache: its numbers, or empty it")
    actions = parser.add_subparsers(dest="action", required=True)
    stats = actions.add_parser("stats", help="where the cache lives, its size, hits and misses")
    add_connection_options(stats)
    stats.set_defaults(func=runner(_stats))
    clear = actions.add_parser("clear", help="empty the cache in every gateway process")
    add_connection_options(clear)
    clear.set_defaults(func=runner(_clear))


def _stats(client: PlatformClient, args: argparse.Namespace) -> int:
    stats = client.call("GET", "/v1/platform/cache")
    if args.json:
        print_json(stats)
        return 0
    where = "Redis, shared by every gateway process" if stats["shared"] else "this process"
    hits = stats["hits"]
    print(f"backend   {stats['backend']} ({where})")
    print(f"entries   {stats['entries']}")
    print(f"size      {_mib(stats['bytes'])} of {_mib(stats['max_bytes'])}")
    print(f"hits      {hits['exact']} exact, {hits['semantic']} semantic "
          f"(ratio {stats['hit_ratio']:.1%})")  # fmt: skip
    print(f"misses    {stats['misses']}; kept {stats['stores']}, evicted {stats['evictions']}, "
          f"opted out {stats['skipped']}")  # fmt: skip
    return 0


def _clear(client: PlatformClient, args: argparse.Namespace) -> int:
    done = client.call("DELETE", "/v1/platform/cache")
    if args.json:
        print_json(done)
    else:
        print(f"cleared {done['entries']} entries")
    return 0


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"
