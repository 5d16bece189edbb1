"""Fixtures for the web console: a real gateway and Debian's Chromium driven by Playwright.

Playwright is used only as a driver of the Chromium that apt installs
(`/usr/bin/chromium`); it never downloads a browser of its own. Without that
binary the console tests are skipped, except in CI, where they fail.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import (
    REPO,
    FakeUpstream,
    Gateway,
    config_yaml,
    fake_endpoint,
    start_fake_upstream,
    start_gateway,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCIM_TOKEN = "scim-token-for-the-console"
OPERATORS_GROUP = "Gateway Operators"
SCREENSHOTS = REPO / "artifacts" / "screenshots"
WIDTHS = {"laptop": (1280, 860), "phone": (390, 844)}

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError("the console tests need Chromium: apt-get install -y chromium")
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)", allow_module_level=True)

from playwright.sync_api import (  # noqa: E402
    Browser,
    ConsoleMessage,
    Page,
    Playwright,
    expect,
    sync_playwright,
)

# Assertions poll; a loaded CI machine gets more than the default 5 s to get there.
expect.set_options(timeout=20_000)


@dataclass
class Console:
    """A running gateway whose console the tests open."""

    gateway: Gateway
    upstream: FakeUpstream

    @property
    def url(self) -> str:
        return f"{self.gateway.url}/console"

    def api(self, method: str, path: str, key: str | None = None, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.gateway.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "authorization": f"Bearer {key or self.gateway.admin_key}",
                "content-type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def scim(self, method: str, path: str, body: Any = None) -> Any:
        """A SCIM request, as the organisation's directory sends it; None for 204."""
        request = urllib.request.Request(
            f"{self.gateway.url}/scim/v2/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"authorization": f"Bearer {SCIM_TOKEN}",
                     "content-type": "application/scim+json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None

    def new_key(self, name: str, policy_id: str = "eu-store") -> str:
        created = self.api("POST", "/v1/platform/keys", body={"name": name, "policy_id": policy_id})
        return str(created["key"])


@pytest.fixture(scope="session")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """`llmeu serve` with two EU endpoints and a global one; `eu-store` (stores content) by default."""
    tmp = tmp_path_factory.mktemp("console")
    upstream = start_fake_upstream(tmp)
    config = config_yaml(
        fake_endpoint("acme-fr-par", upstream, aliases=("fake-model",), provider="acme").replace(
            "    country: FR\n",
            "    country: FR\n    jurisdiction: FR\n    certifications: [secnumcloud]\n    seal: 3\n",
        ),
        fake_endpoint(
            "nordlys-de-fra", upstream, aliases=("fake-model",), country="DE", priority=20
        ),
        fake_endpoint(
            "bigcloud-us-east",
            upstream,
            aliases=("fake-model", "big-model"),
            sovereignty_class="global",
            country="US",
            retention="P30D",
        ),
        default_policy="eu-store",
    )
    # SCIM provisions the Users page's directory; members of the group act as operators.
    gateway = start_gateway(tmp, config=config, env={"SCIM_TOKEN": SCIM_TOKEN},
                            args=["--scim-token-env", "SCIM_TOKEN",
                                  "--oidc-role-map", f"{OPERATORS_GROUP}=operator"])  # fmt: skip
    try:
        yield Console(gateway, upstream)
    finally:
        gateway.stop()
        upstream.stop()


# Module scope, not session: the sync driver keeps an event loop running in
# this thread while it is open, and the suite's asyncio tests need it closed.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tab (own session storage) at laptop width; fails the test on any script error
    or Content-Security-Policy violation."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        # HTTP error statuses are the API's answers, which the tests check themselves.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            problems.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(str(error)))
    yield page
    context.close()
    assert problems == [], f"the page reported errors: {problems}"


def sign_in(page: Page, console: Console, key: str) -> None:
    page.goto(console.url)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Playground", level=1).wait_for()


def screenshot(page: Page, name: str) -> None:
    """`artifacts/screenshots/<name>-<width>.png` at laptop and phone widths (full page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    original = page.viewport_size
    for width, height in WIDTHS.values():
        page.set_viewport_size({"width": width, "height": height})
        # The charts redraw on resize, before the second frame after it.
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    if original is not None:
        page.set_viewport_size(original)
