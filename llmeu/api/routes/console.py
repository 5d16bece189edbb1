"""The web console: `GET /console` and its assets, served from the package.

The console is plain HTML, CSS and JavaScript modules in `llmeu/console/static`
(no build step, nothing fetched from another origin), so it works on a machine
with no internet. Only the files of that one folder are served, looked up by
name in a table read once from the package: a path holding `/`, `..` or any
name not in the table is a 404, so there is nothing to traverse.

Every response carries a strict Content-Security-Policy (scripts, styles and
API calls from this origin only; no inline script or style, no framing, no
form posts) and is revalidated on each load (`no-cache` with an ETag):
without a build step the file names carry no version, so a long cache would
keep an old console after an upgrade.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from llmeu.api.http.asgi import Headers, Request
from llmeu.errors import NotFound
from llmeu.routing.predicates import rules_document

_CONTENT_TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Headers = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_INDEX = "index.html"
_POLICY_RULES = "policy-rules.js"
"""Made from the predicate table when the console is first served, not read from a file."""


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: bytes
    etag: bytes


@cache
def console_assets() -> dict[str, Asset]:
    """The console's files by name, read once from the installed package."""
    folder = resources.files("llmeu") / "console" / "static"
    assets: dict[str, Asset] = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if not entry.is_file() or suffix not in _CONTENT_TYPES:
            continue
        assets[entry.name] = _asset(entry.name, entry.read_bytes())
    assets[_POLICY_RULES] = _asset(_POLICY_RULES, policy_rules_module())
    return assets


def policy_rules_module() -> bytes:
    """The policy rules of `llmeu.routing.predicates` as a JavaScript module: the console's
    `policy.js` compares policies by them, so its rules are the gateway's."""
    return b"export const RULES = " + json.dumps(rules_document()).encode() + b";\n"


def _asset(name: str, body: bytes) -> Asset:
    etag = b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"'
    return Asset(body, _CONTENT_TYPES["." + name.rpartition(".")[2]], etag)


async def _send_asset(request: Request, asset: Asset) -> None:
    headers: Headers = [
        (b"content-type", asset.content_type),
        (b"cache-control", b"no-cache"),
        (b"etag", asset.etag),
        *SECURITY_HEADERS,
    ]
    if request.header(b"if-none-match") == asset.etag.decode():
        await request.respond(304, b"", headers)
        return
    await request.respond(200, asset.body, headers)


async def handle_console(request: Request) -> None:
    await _send_asset(request, console_assets()[_INDEX])


async def handle_console_slash(request: Request) -> None:
    """`/console/` → `/console`; relative, so a gateway behind a path prefix keeps it."""
    headers: Headers = [(b"location", b"../console"), *SECURITY_HEADERS]
    await request.respond(308, b"", headers)


async def handle_console_asset(request: Request, name: str) -> None:
    asset = console_assets().get(name) if name != _INDEX else None
    if asset is None:
        raise NotFound(f"no console file `{name}`", code="unknown_route")
    await _send_asset(request, asset)
