"""The route table is the one list of routes: the OpenAPI document describes exactly it."""

from __future__ import annotations

import json

import httpx

from llmeu.api.app import App, documented_routes
from llmeu.api.routes.route_table import openapi_document


def published() -> set[tuple[str, str]]:
    paths = json.loads(openapi_document())["paths"]
    return {(method.upper(), path) for path, item in paths.items() for method in item}


def test_every_route_is_in_the_openapi_document_and_nothing_else(app: App) -> None:
    assert documented_routes(app) == published()


def test_undocumented_routes_are_the_consoles_pages(app: App) -> None:
    """The console's pages, and its sign-in with an issuer: browser routes, not the API."""
    hidden = {r.path for r in app.routes if not r.documented}
    assert hidden == {"/console", "/console/", "/console/{name}", "/auth/login",
                      "/auth/callback", "/auth/session", "/auth/logout"}  # fmt: skip


async def test_every_documented_route_answers_on_its_path(client: httpx.AsyncClient) -> None:
    """A route the document names is served: never the router's own 404 or 405."""
    for method, path in sorted(published()):
        url = path.replace("{", "x").replace("}", "")
        response = await client.request(method, url)
        error = response.json().get("error", {}) if response.status_code >= 400 else {}
        assert error.get("code") not in ("unknown_route", "method_not_allowed"), (method, path)
