"""`llmeu receipt verify`: check a call's signed receipt offline.

    llmeu receipt verify receipt.jws --jwks https://gateway.example/.well-known/llmeu/jwks.json
    llmeu receipt verify receipt.jws --jwks jwks.json --request body.json --content answer.txt

RECEIPT is a file holding the receipt, `-` for standard input, or the
receipt itself. `--jwks` is a JWKS file or an http(s) URL. With `--request`
or `--content`, the file's SHA-256 must equal the digest the receipt carries
(the request body exactly as sent; the text produced, UTF-8).

Prints one line — `valid: …` or `invalid: <why>` — and exits 0 for a valid
receipt, 1 otherwise; `--json` prints the line and the signed payload.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx

from llmeu.evidence.receipts import ReceiptCheck, verify_receipt

_JWKS_TIMEOUT_SECONDS = 10.0
_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("receipt", help="verify signed per-call receipts")
    actions = parser.add_subparsers(dest="action", required=True)
    verify = actions.add_parser("verify", help="check a receipt's signature and digests")
    verify.add_argument("receipt", help="a file holding the receipt, `-` for stdin, or the JWS")
    verify.add_argument("--jwks", required=True, help="the gateway's JWKS: a file or an URL")
    verify.add_argument("--request", type=Path, help="the request body the receipt covers")
    verify.add_argument("--content", type=Path, help="the content produced (UTF-8 text)")
    verify.add_argument("--json", action="store_true", help="print the result and payload")
    verify.set_defaults(func=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    try:
        receipt = _read_receipt(args.receipt)
        jwks = _read_jwks(args.jwks)
        request = args.request.read_bytes() if args.request else None
        content = args.content.read_bytes() if args.content else None
    except (OSError, ValueError, httpx.HTTPError) as error:
        check = ReceiptCheck(False, f"invalid: {error}")
    else:
        check = verify_receipt(receipt, jwks, request_body=request, content=content)
    if args.json:
        print(json.dumps({"valid": check.valid, "line": check.line, "payload": check.payload}))
    else:
        print(check.line)
    return 0 if check.valid else 1


def _read_receipt(argument: str) -> str:
    if argument == "-":
        return sys.stdin.read().strip()
    if _COMPACT_JWS.fullmatch(argument) and not _is_file(argument):
        return argument
    return Path(argument).read_text(encoding="ascii").strip()


def _is_file(argument: str) -> bool:
    try:
        return Path(argument).is_file()
    except OSError:  # e.g. a receipt longer than a file name may be
        return False


def _read_jwks(location: str) -> dict[str, Any]:
    if location.startswith(("https://", "http://")):
        response = httpx.get(location, timeout=_JWKS_TIMEOUT_SECONDS, follow_redirects=True)
        response.raise_for_status()
        text = response.text
    else:
        text = Path(location).read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except ValueError:
        raise ValueError(f"the JWKS at {location} is not JSON") from None
    if not isinstance(document, dict):
        raise ValueError(f"the JWKS at {location} is not a JSON object")
    return document
