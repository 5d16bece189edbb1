"""`llmeu receipt verify`: check a call's signed receipt offline.

    llmeu receipt verify receipt.jws --jwks https://gateway.example/.well-known/llmeu/jwks.json
    llmeu receipt verify receipt.jws --jwks jwks.json --request body.json --content answer.txt

RECEIPT is a file holding the receipt, `-` for standard input, or the
receipt itself (a compact JWS: three dot-separated parts). A file of that
name is read first; otherwise an argument of the JWS's shape is taken as the
receipt, and anything else is neither. `--jwks` is a JWKS file or an http(s)
URL. With `--request` or `--content`, the file's SHA-256 must equal the
digest the receipt carries (the request body exactly as sent; the text
produced, UTF-8).

Prints one line — `valid: …` or `invalid: <why>` — ending with where the
receipt was read (`(receipt from file …)`, `(receipt given inline)`, `(receipt
from standard input)`), and exits 0 for a valid receipt, 1 otherwise;
`--json` prints the line, the source and the signed payload.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from llmeu.evidence.receipts import ReceiptCheck, verify_receipt

_JWKS_TIMEOUT_SECONDS = 10.0
_INLINE = "receipt given inline"


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
    source = ""  # where the receipt was read, once it was
    try:
        receipt, source = _read_receipt(args.receipt)
        jwks = _read_jwks(args.jwks)
        request = args.request.read_bytes() if args.request else None
        content = args.content.read_bytes() if args.content else None
    except (OSError, ValueError, httpx.HTTPError) as error:
        check = ReceiptCheck(False, f"invalid: {error}")
    else:
        check = verify_receipt(receipt, jwks, request_body=request, content=content)
    if source == _INLINE and not check.valid:  # perhaps a file name mistyped
        source += ", there being no file of that name"
    line = f"{check.line} ({source})" if source else check.line
    if args.json:
        print(json.dumps({"valid": check.valid, "line": line, "source": source,
                          "payload": check.payload}))  # fmt: skip
    else:
        print(line)
    return 0 if check.valid else 1


def _read_receipt(argument: str) -> tuple[str, str]:
    """The receipt and where it was read: stdin, a file, or the argument itself."""
    if argument == "-":
        return sys.stdin.read().strip(), "receipt from standard input"
    path = Path(argument)
    if _is_file(path):
        try:
            return path.read_bytes().decode("ascii").strip(), f"receipt from file {argument}"
        except UnicodeDecodeError:
            raise ValueError(f"the file {argument} does not hold a receipt (not ASCII)") from None
    inline = argument.strip()
    if inline.count(".") == 2 and not any(c in inline for c in "/\\"):
        return inline, _INLINE
    shown = argument if len(argument) <= 60 else f"{argument[:57]}..."
    raise ValueError(
        f"RECEIPT {shown!r} is neither a file nor a receipt given inline (a compact JWS: "
        "three dot-separated base64url parts)"
    )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
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
