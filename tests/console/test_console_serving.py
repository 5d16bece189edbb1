"""How the gateway serves the console: from the package, typed, revalidated, locked down."""

from __future__ import annotations

import http.client
import re
import tomllib
from pathlib import Path

import pytest

from llmeu.api.routes.console import CONTENT_SECURITY_POLICY, console_assets, policy_rules_module
from tests.console.conftest import Console
from tests.support.processes import REPO

STATIC = REPO / "llmeu" / "console" / "static"


def get(
    console: Console, path: str, headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    """A raw GET: http.client sends the path as written (no `..` clean-up on the way)."""
    connection = http.client.HTTPConnection("127.0.0.1", console.gateway.port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_every_file_of_the_folder_is_served_and_installed() -> None:
    """The folder's files, and the one module made from the predicate table."""
    on_disk = sorted(p.name for p in STATIC.iterdir() if p.is_file())
    assert sorted(console_assets()) == sorted([*on_disk, "policy-rules.js"])
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["llmeu"]
    assert "console/static/*" in package_data


def test_nothing_is_loaded_from_another_origin() -> None:
    """No CDN, no web font, no absolute URL: the console works on a machine with no internet."""
    html = (STATIC / "index.html").read_text()
    assert re.findall(r'(?:src|href)="([^"#]+)"', html) == [
        "console/favicon.svg",
        "console/console.css",
        "console/app.js",
    ]
    for script in STATIC.glob("*.js"):
        source = script.read_text()
        imports = re.findall(r'^import [^;]*? from "([^"]+)";', source, re.MULTILINE)
        imports += re.findall(r'import\("([^"]+)"\)', source)
        assert all(i.startswith("./") for i in imports), (script.name, imports)
    css = (STATIC / "console.css").read_text()
    assert "url(" not in css and "@import" not in css and "@font-face" not in css


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/console", "text/html; charset=utf-8"),
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
        ("/console/favicon.svg", "image/svg+xml"),
    ],
)
def test_types_and_security_headers(console: Console, path: str, content_type: str) -> None:
    response = get(console, path)
    assert response.status == 200
    assert response.getheader("content-type") == content_type
    assert response.getheader("content-security-policy") == CONTENT_SECURITY_POLICY
    assert response.getheader("x-content-type-options") == "nosniff"
    assert response.getheader("x-frame-options") == "DENY"
    assert response.getheader("referrer-policy") == "no-referrer"
    assert response.getheader("cache-control") == "no-cache"


def test_the_policy_allows_nothing_inline_and_nothing_from_elsewhere() -> None:
    directives = dict(d.strip().split(" ", 1) for d in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["form-action"] == "'none'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY


def test_revalidation_with_the_etag(console: Console) -> None:
    first = get(console, "/console/app.js")
    etag = first.getheader("etag")
    assert etag
    again = get(console, "/console/app.js", {"if-none-match": etag})
    assert again.status == 304
    assert get(console, "/console/app.js", {"if-none-match": '"other"'}).status == 200


def test_trailing_slash_redirects_relatively(console: Console) -> None:
    response = get(console, "/console/")
    assert response.status == 308
    assert response.getheader("location") == "../console"


@pytest.mark.parametrize(
    "path",
    [
        "/console/..",
        "/console/../pyproject.toml",
        "/console/..%2F..%2Fpyproject.toml",
        "/console/%2e%2e/%2e%2e/pyproject.toml",
        "/console/static/app.js",
        "/console//etc/passwd",
        "/console/index.html",
        "/console/missing.js",
        "/console/console.py",
        "/console/.hidden",
    ],
)
def test_nothing_outside_the_folder_table_is_served(console: Console, path: str) -> None:
    response = get(console, path)
    assert 400 <= response.status < 500
    assert response.getheader("content-type") == "application/json"


def test_packaged_files_are_what_is_on_disk() -> None:
    for name, asset in console_assets().items():
        made = policy_rules_module() if name == "policy-rules.js" else None
        assert asset.body == (made or (STATIC / name).read_bytes())
        assert Path(name).suffix in {".html", ".js", ".css", ".svg"}
