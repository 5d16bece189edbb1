"""What `llmeu serve` tells the person who started it, once it is ready.

The console's address and a curl to paste. Clients read their key from
`LLMEU_API_KEY` (every `llmeu` command, the documentation's snippets), so that is the
one name the notice uses for it: the curl always reads `$LLMEU_API_KEY`, and
the notice says what to put there —

- first start, no `LLMEU_ADMIN_KEY`: the generated admin key, shown once
  (only its hash is stored), as an `export LLMEU_API_KEY=…` line to paste;
- `LLMEU_ADMIN_KEY` set: `export LLMEU_API_KEY="$LLMEU_ADMIN_KEY"`;
- a restart on a ledger that holds an admin key: the key cannot be shown
  again, so the notice says that it exists and how to replace it
  (`LLMEU_ADMIN_KEY`, or `llmeu keys reset-admin`).

Written to standard error, as a block a terminal shows whole; with
`--log-format json` it is one log record instead (logger `llmeu.serve`, fields
`url`, `console`, `admin_key` and, on a first start, `generated_admin_key`), so
that standard error stays one JSON object per line for a log collector.
"""

from __future__ import annotations

import logging
import shlex
import sys
from dataclasses import dataclass
from enum import Enum

from llmeu.observability.logs import JsonFormatter
from llmeu.routing.catalog import Capability, Endpoint


class AdminKey(Enum):
    GENERATED = "generated"
    CONFIGURED = "configured"
    EXISTING = "existing"


@dataclass(frozen=True, slots=True)
class Welcome:
    root: str
    """The gateway as a browser on this machine reaches it, e.g. http://127.0.0.1:8080."""
    admin_key: AdminKey
    token: str | None
    """The generated admin key; None otherwise."""
    model: str | None
    """A chat model the curl can ask; None when the catalog serves no chat."""


def reachable_root(host: str, port: int) -> str:
    """A wildcard address is reached through the loopback one."""
    if host in ("", "0.0.0.0"):  # noqa: S104 - naming the wildcard, not binding to it
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def chat_model(endpoints: list[Endpoint]) -> str | None:
    """The name the first chat endpoint (in priority order) is best asked by."""
    chat = [e for e in endpoints if Capability.CHAT in e.capabilities]
    if not chat:
        return None
    first = min(chat, key=lambda e: e.priority)
    return first.aliases[0] if first.aliases else first.model


def render(welcome: Welcome) -> str:
    lines = ["", f"llmeu is ready on {welcome.root}", "", f"  console   {welcome.root}/console"]
    if welcome.admin_key is AdminKey.GENERATED:
        lines += ["", "  admin key (shown once, store it now; set LLMEU_ADMIN_KEY to choose your",
                  "  own at the next start):", "",
                  f"    export LLMEU_API_KEY={welcome.token}"]  # fmt: skip
    elif welcome.admin_key is AdminKey.CONFIGURED:
        lines += ["", "  admin key: the value of LLMEU_ADMIN_KEY; clients read it as",
                  "  LLMEU_API_KEY:", "",
                  '    export LLMEU_API_KEY="$LLMEU_ADMIN_KEY"']  # fmt: skip
    else:
        lines += [
            "",
            "  An admin key already exists (it was shown once, at the first start): clients",
            "  read it as LLMEU_API_KEY. Lost it? Set LLMEU_ADMIN_KEY before starting, or run",
            "  `llmeu keys reset-admin` (same --data-dir/--database-url) and restart.",
        ]
    if welcome.model is not None:
        body = (
            f'{{"model": "{welcome.model}", '
            '"messages": [{"role": "user", "content": "Say hello in French."}]}'
        )
        lines += ["", "  try it:", "",
                  f"    curl {welcome.root}/v1/chat/completions \\",
                  '      -H "Authorization: Bearer $LLMEU_API_KEY" \\',
                  "      -H 'content-type: application/json' \\",
                  f"      -d {shlex.quote(body)}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def announce(welcome: Welcome, *, log_format: str = "text") -> None:
    if log_format == "json":
        fields: dict[str, str | None] = {
            "url": welcome.root,
            "console": f"{welcome.root}/console",
            "admin_key": welcome.admin_key.value,
            "generated_admin_key": welcome.token,
            "model": welcome.model,
        }
        # Formatted here, not sent through the logger: whatever the log level, the
        # person who started the gateway must see a generated key once.
        record = logging.LogRecord(
            "llmeu.serve", logging.INFO, __file__, 0, "llmeu is ready on %s", (welcome.root,), None
        )
        record.llmeu_fields = fields
        print(JsonFormatter().format(record), file=sys.stderr, flush=True)
        return
    print(render(welcome), file=sys.stderr, flush=True)
