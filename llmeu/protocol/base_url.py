"""What a base URL means: the gateway's root (`http://host:8080`) or its API root (`…/v1`).

Users copy whichever form they saw last: the README's curl uses the root,
every OpenAI SDK wants `…/v1` in `OPENAI_BASE_URL`. Both name the same
gateway, so every llmeu command and `llmeu.client` accepts both:

- `api_root` is where `chat/completions` lives: a URL without a path gets
  `/v1`; a URL with a path (`…/v1`, or a server that mounts its OpenAI API
  elsewhere, such as `…/openai/v1`) is used as given.
- `gateway_root` is where `/v1/platform/…` and `/console` live: the URL
  without a trailing `/v1`.

Pure: no I/O, no environment. Reading `LLMEU_BASE_URL` (and the
`OPENAI_BASE_URL` fallback) is the command line's business.
"""

from __future__ import annotations

from urllib.parse import urlsplit

API_PREFIX = "/v1"


def api_root(url: str) -> str:
    """The URL that `chat/completions`, `embeddings` and `models` hang from."""
    url = url.strip().rstrip("/")
    if urlsplit(url).path in ("", "/"):
        return url + API_PREFIX
    return url


def gateway_root(url: str) -> str:
    """The gateway's own root: `api_root` without its `/v1`."""
    return url.strip().rstrip("/").removesuffix(API_PREFIX)
