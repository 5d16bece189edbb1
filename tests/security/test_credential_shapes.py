"""`redact_credentials`: the shapes of common provider keys and tokens, and the endpoint's
own secrets by exact match; ordinary text and the gateway's words untouched."""

from __future__ import annotations

import pytest

from llmeu.credentials import REDACTED, redact_credentials

CREDENTIALS = [
    pytest.param("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", id="openai-project"),
    pytest.param("sk-0123456789abcdefABCDEF", id="openai-legacy"),
    pytest.param("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-yz0123456789", id="anthropic"),
    pytest.param("AKIAIOSFODNN7EXAMPLE", id="aws-access-key-id"),
    pytest.param("ASIAY34FZKBOKMUTVV7A", id="aws-session-key-id"),
    pytest.param("AIzaSyA-1234567890abcdefghijklmnopqrstu", id="google-api-key"),
    pytest.param("ya29.a0AfH6SMBx3abcdefghijklmnopqrstuvwx", id="google-oauth-token"),
    pytest.param("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                 id="jwt"),
    pytest.param("Bearer 0a1b2c3d4e5f60718293", id="bearer"),
]  # fmt: skip


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_each_shape_is_taken_out_wherever_it_stands(credential: str) -> None:
    text = f"Incorrect API key provided: {credential}. You can find your key at …"
    out = redact_credentials(text)
    assert credential not in out
    assert out == f"Incorrect API key provided: {REDACTED}. You can find your key at …"


def test_a_configured_secret_is_taken_out_by_exact_match() -> None:
    secret = "scw-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"
    assert redact_credentials(f"bad key {secret}!", [secret]) == f"bad key {REDACTED}!"
    assert secret in redact_credentials(f"bad key {secret}!")  # no pattern knows its shape


@pytest.mark.parametrize(
    "text",
    [
        "the prompt has 4570 tokens; the local model's context is 4096",
        "No endpoint for `mistral-small` satisfies policy `eu-strict`: scaleway: country FR",
        "upstream sent an invalid chunk: expecting ',' at line 1 column 52",
        "rate limit reached for requests (skip-list rebuilt)",
    ],
)
def test_ordinary_text_is_left_whole(text: str) -> None:
    assert redact_credentials(text, ["short"]) == text
