"""`llmeu subjects erase USER_ID`: erase one end user's stored content (admin key).

    llmeu subjects erase user-4821
    llmeu subjects erasures

Every call made for that end user — the `user`, `metadata.user_id` or
`safety_identifier` the application sent — loses its stored prompt and output;
its metadata (when, where it ran, tokens, cost) stays, and the erasure itself is
recorded with the subject's SHA-256, never the id. Through the platform API,
`DELETE /v1/platform/subjects/{user_id}`.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from llmeu.cli.platform_api import (
    PlatformClient,
    add_action,
    moment,
    print_json,
    print_table,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("subjects", help="erase a data subject's stored content")
    actions = parser.add_subparsers(dest="action", required=True)
    add_action(actions, "erase", _erase, help="erase the stored content of one end user's calls",
               arguments=_erase_options)  # fmt: skip
    add_action(actions, "erasures", _erasures, help="list the erasures done")


def _erase_options(erase: argparse.ArgumentParser) -> None:
    erase.add_argument("user_id", help="the end-user id the application sent with its calls")


def _erase(client: PlatformClient, args: argparse.Namespace) -> int:
    done = client.call("DELETE", f"/v1/platform/subjects/{quote(args.user_id, safe='')}")
    if args.json:
        print_json(done)
    else:
        print(
            f"erased the stored content of {done['traces_erased']} traces "
            f"(erasure {done['id']}, subject sha256 {done['subject_sha256'][:16]}…)"
        )
    return 0


def _erasures(client: PlatformClient, args: argparse.Namespace) -> int:
    listing = client.call("GET", "/v1/platform/erasures")
    if args.json:
        print_json(listing)
        return 0
    print_table(
        ("id", "subject sha256", "requested", "by", "traces"),
        [
            (e["id"], e["subject_sha256"][:16] + "…", moment(e["requested_at"]),
             e["requested_by"], e["traces_erased"])
            for e in listing["data"]
        ],
    )  # fmt: skip
    return 0
