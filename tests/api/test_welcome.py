"""The start-up notice: where the gateway is reached from this machine, and what to ask."""

from __future__ import annotations

import pytest

from llmeu.api.welcome import AdminKey, Welcome, reachable_root, render


@pytest.mark.parametrize(
    ("host", "root"),
    [
        pytest.param("127.0.0.1", "http://127.0.0.1:8080", id="loopback"),
        pytest.param("0.0.0.0", "http://127.0.0.1:8080", id="any-ipv4"),
        pytest.param("::", "http://[::1]:8080", id="any-ipv6"),
        pytest.param("::1", "http://[::1]:8080", id="ipv6"),
        pytest.param("gw.internal", "http://gw.internal:8080", id="name"),
    ],
)
def test_reachable_root(host: str, root: str) -> None:
    assert reachable_root(host, 8080) == root


def test_without_a_chat_model_there_is_no_curl_but_the_console() -> None:
    text = render(Welcome("http://127.0.0.1:8080", AdminKey.EXISTING, None, None))
    assert "http://127.0.0.1:8080/console" in text
    assert "curl" not in text
    assert "llmeu keys reset-admin" in text
