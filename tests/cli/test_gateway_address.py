"""Where `llmeu` subcommands find the gateway and its key: options, LLMEU_*, then OPENAI_*."""

from __future__ import annotations

import pytest

from llmeu.cli.gateway_address import DEFAULT_BASE_URL, gateway_address

LLMEU_KEY = "sk-llmeu-kx-secret"
CASES = [
    pytest.param({}, {}, DEFAULT_BASE_URL, None, id="nothing-set"),
    pytest.param({"base_url": "http://o", "api_key": "k-opt"},
                 {"LLMEU_BASE_URL": "http://e", "LLMEU_API_KEY": "k-env"}, "http://o", "k-opt",
                 id="options-win"),
    pytest.param({}, {"LLMEU_BASE_URL": "http://e", "OPENAI_BASE_URL": "http://oa/v1",
                      "LLMEU_API_KEY": "k-env", "OPENAI_API_KEY": "k-oa"}, "http://e", "k-env",
                 id="llmeu-variables-win"),
    pytest.param({}, {"OPENAI_BASE_URL": "http://oa/v1", "OPENAI_API_KEY": "k-oa"},
                 "http://oa/v1", "k-oa", id="openai-pair-as-fallback"),
    pytest.param({}, {"OPENAI_API_KEY": LLMEU_KEY}, DEFAULT_BASE_URL, LLMEU_KEY,
                 id="openai-key-that-is-an-llmeu-key"),
    pytest.param({}, {"LLMEU_BASE_URL": "http://e", "OPENAI_API_KEY": "sk-proj-openai"},
                 "http://e", None, id="an-openai-secret-is-not-sent-to-another-server"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "environ", "url", "key"), CASES)
def test_precedence(
    options: dict[str, str], environ: dict[str, str], url: str, key: str | None
) -> None:
    address = gateway_address(options.get("base_url"), options.get("api_key"), environ)
    assert (address.url, address.api_key) == (url, key)


def test_the_root_and_the_api_root_are_one_gateway() -> None:
    for url in ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/"):
        address = gateway_address(url, None, {})
        assert address.root == "http://127.0.0.1:8080"
        assert address.api_root == "http://127.0.0.1:8080/v1"
