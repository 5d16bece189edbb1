"""The session cookie's attributes, and the origin a change with it must come from."""

from __future__ import annotations

import pytest

from llmeu.api.http.asgi import Request
from llmeu.api.routes.session_cookie import clear_cookie, own_origin, set_cookie


def request(scheme: str, host: str) -> Request:
    scope = {"type": "http", "method": "POST", "path": "/", "scheme": scheme,
             "headers": [(b"host", host.encode())]}  # fmt: skip
    return Request(scope, None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("secure", [True, False], ids=["https", "http"])
def test_the_cookie_is_httponly_lax_and_secure_over_https(secure: bool) -> None:
    name, value = set_cookie("opaque-id", secure=secure, max_age=43200)
    attributes = value.decode().split("; ")
    assert name == b"set-cookie" and attributes[0] == "llmeu_session=opaque-id"
    assert {"Path=/", "Max-Age=43200", "HttpOnly", "SameSite=Lax"} <= set(attributes)
    assert ("Secure" in attributes) is secure
    assert "Max-Age=0" in clear_cookie(secure=secure)[1].decode()


def test_the_gateways_origin_is_the_redirect_urls_else_the_requests() -> None:
    behind_proxy = request("http", "10.0.0.5:8080")
    assert own_origin(behind_proxy, "https://llm.example.org/gw/auth/callback") == (
        "https://llm.example.org"
    )
    assert own_origin(behind_proxy, None) == "http://10.0.0.5:8080"
