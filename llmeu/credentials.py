"""Credentials never cross: secrets taken out of text that came from an upstream.

Providers often quote what they were sent when they refuse it — `Incorrect API
key provided: sk-…` — and that text would reach the tenant's error body, a
stream's error frame, the trace and the logs. Every upstream error passes
through `redact_credentials` on its way out of an attempt (`llmeu.api.call`),
with the endpoint's own configured secrets (exact match, wherever they
appear) and the shapes of common provider keys and bearer tokens: OpenAI and
Anthropic keys (`sk-…`, `sk-ant-…`), AWS access key ids, Google API keys and
OAuth access tokens, JSON Web Tokens and `Bearer …` credentials. The gateway's
own messages are never passed through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[credential redacted]"
_SHORTEST_KNOWN = 8
"""A configured secret shorter than this is not searched for: it would match ordinary words."""

_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{12,}"  # Anthropic
    r"|sk-[A-Za-z0-9_\-]{16,}"  # OpenAI (sk-, sk-proj-, sk-svcacct-) and look-alikes
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bAIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|\bya29\.[0-9A-Za-z_\-]{20,}(?:\.[0-9A-Za-z_\-]+)*"  # Google OAuth access tokens
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"  # JWTs
    r"|\b[Bb]earer\s+(?=[A-Za-z0-9._~+/\-]{8})[A-Za-z0-9_~+/\-]+(?:\.[A-Za-z0-9_~+/\-]+)*=*"
)


def redact_credentials(text: str, known: Iterable[str] = ()) -> str:
    """`text` with every known secret and every credential-shaped string replaced."""
    for secret in sorted({k for k in known if len(k) >= _SHORTEST_KNOWN}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _SHAPES.sub(REDACTED, text)
