"""Where the gateway is and which key to show it: one meaning for every subcommand.

    --base-url URL   [LLMEU_BASE_URL, else OPENAI_BASE_URL]   default http://127.0.0.1:8080
    --api-key KEY    [LLMEU_API_KEY, else OPENAI_API_KEY]

The URL is the gateway's root or its API root (`…/v1`): both are accepted by
`llmeu chat`, `keys`, `usage` and `traces` alike (`llmeu.protocol.base_url`).
`OPENAI_BASE_URL` and `OPENAI_API_KEY` are the variables every OpenAI tool
reads, so a shell set up for the SDKs works for `llmeu` too; the `LLMEU_`
ones win when both are set.

`OPENAI_API_KEY` often holds a secret for OpenAI itself (the built-in
catalog's `openai-global-…` endpoint reads it). It is therefore sent only
where it belongs: when the URL came from `OPENAI_BASE_URL` too (the pair
configures one server), or when it is an llmeu key (`sk-llmeu-…`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from llmeu.protocol.base_url import api_root, gateway_root

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
LLMEU_KEY_PREFIX = "sk-llmeu-"


@dataclass(frozen=True, slots=True)
class GatewayAddress:
    url: str
    """As given: the root or the API root."""
    api_key: str | None

    @property
    def api_root(self) -> str:
        return api_root(self.url)

    @property
    def root(self) -> str:
        return gateway_root(self.url)


def gateway_address(
    base_url: str | None, api_key: str | None, environ: Mapping[str, str]
) -> GatewayAddress:
    """The options win, then the `LLMEU_` variables, then the `OPENAI_` ones."""
    from_openai = False
    url = base_url or environ.get("LLMEU_BASE_URL")
    if not url and environ.get("OPENAI_BASE_URL"):
        url, from_openai = environ["OPENAI_BASE_URL"], True
    key = api_key or environ.get("LLMEU_API_KEY")
    if not key:
        openai_key = environ.get("OPENAI_API_KEY")
        if openai_key and (from_openai or openai_key.startswith(LLMEU_KEY_PREFIX)):
            key = openai_key
    return GatewayAddress(url or DEFAULT_BASE_URL, key or None)
