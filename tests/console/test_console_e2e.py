"""The console in a real browser against a real `llmeu serve` and a slow fake upstream.

Each test signs in with a key of its own, so the traces and usage it checks
are exactly the calls it made. Screenshots of every page, at laptop and phone
widths, go to `artifacts/screenshots/`.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

from playwright.sync_api import Page, expect

from llmeu.routing.config_file import parse_policy
from tests.console.conftest import Console, screenshot, sign_in

ANSWER = "#pg-answer"
TRACE_ID = re.compile(r"trc_[0-9a-f]+")


def answer_length(page: Page) -> int:
    return int(page.evaluate(f"document.querySelector('{ANSWER}').textContent.length"))


def send_prompt(page: Page, prompt: str) -> None:
    page.get_by_label("Prompt", exact=True).fill(prompt)
    page.get_by_role("button", name="Send").click()


def trace_id_on_page(page: Page) -> str:
    link = page.get_by_role("link", name=re.compile("^Open trace"))
    expect(link).to_be_visible()
    match = TRACE_ID.search(link.inner_text())
    assert match is not None
    return match.group(0)


def assert_fits_phone_width(page: Page) -> None:
    """At 390 px nothing but the tables' own scroll boxes may scroll sideways."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 860})


def assert_every_control_is_labelled(page: Page) -> None:
    unlabelled = page.evaluate(
        """[...document.querySelectorAll("input, select, textarea, button")]
            .filter((el) => !el.closest("[hidden]"))
            .filter((el) => !(el.labels?.length || el.getAttribute("aria-label") || el.textContent.trim()))
            .map((el) => el.outerHTML)"""
    )
    assert unlabelled == []


CONTRAST = """() => {
    // WCAG 2 contrast of every visible text against the first opaque background behind it.
    const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
    const luminance = ([r, g, b]) => {
        const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
        for (; el; el = el.parentElement) {
            const c = rgb(getComputedStyle(el).backgroundColor);
            if (c.length === 3 || c[3] === 1) return c.slice(0, 3);
        }
        return [255, 255, 255];
    };
    const low = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (!node.textContent.trim() || !el.checkVisibility() || el.closest("[disabled], svg, option")) continue;
        const style = getComputedStyle(el);
        const [a, b] = [luminance(rgb(style.color).slice(0, 3)), luminance(background(el))];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < 4.5) low.push(`${node.textContent.trim().slice(0, 30)}: ${ratio.toFixed(2)}`);
    }
    return low;
}"""


def assert_text_contrast(page: Page) -> None:
    assert page.evaluate(CONTRAST) == []


def test_the_contrast_check_sees_pale_text(page: Page, console: Console) -> None:
    page.goto(console.url)
    # The sign-in form replaces the page's main once the console knows no one is signed
    # in: text added before then would go with what it replaces.
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate(CONTRAST) == []
    page.evaluate(
        """() => {
            const p = document.createElement("p");
            p.textContent = "pale";
            p.style.color = "#aaaaaa";
            document.querySelector("main").append(p);
        }"""
    )
    assert [line.split(":")[0] for line in page.evaluate(CONTRAST)] == ["pale"]


def call(console: Console, key: str, content: str = "hi") -> str:
    """One non-streamed chat call with `key`; its trace id."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": content}]}
    request = urllib.request.Request(
        f"{console.gateway.url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["llmeu"]["trace_id"])


def test_a_tenant_streams_stops_and_finds_both_calls(page: Page, console: Console) -> None:
    key = console.new_key("e2e-tenant")
    page.goto(console.url)
    assert_text_contrast(page)
    screenshot(page, "sign-in")
    sign_in(page, console, key)
    assert key not in page.url
    assert page.evaluate("sessionStorage.getItem('llmeu.console.key')") == key
    expect(page.get_by_role("link", name="Keys")).to_be_hidden()
    assert_every_control_is_labelled(page)

    # 1. An answer streams in: its text grows while the call is still open.
    send_prompt(page, "Say something [[chunks=60;delay=50]]")
    lengths = [0]
    for _ in range(3):
        page.wait_for_function(
            f"n => document.querySelector('{ANSWER}').textContent.length > n", arg=lengths[-1]
        )
        lengths.append(answer_length(page))
        assert "streaming" in (page.locator(ANSWER).get_attribute("class") or "")
    assert lengths == sorted(set(lengths))
    expect(page.locator(".live-stats dd").first).not_to_have_text("—")
    screenshot(page, "playground-streaming")
    expect(page.locator(".stream-status")).to_contain_text("complete", timeout=30_000)
    assert "complete" in (page.locator(ANSWER).get_attribute("class") or "")
    expect(page.locator(ANSWER)).to_contain_text("tok59")
    routing = page.get_by_role("region", name="Where it ran")
    for fact in ("acme", "acme-fr-par", "eu_sovereign", "eu-store", "P1D", "€"):
        expect(routing).to_contain_text(fact)
    completed_id = trace_id_on_page(page)
    assert_text_contrast(page)
    screenshot(page, "playground")

    # 2. Stop: the fetch is aborted, the answer is marked incomplete, the gateway records `cancelled`.
    send_prompt(page, "Keep going [[chunks=400;delay=50]]")
    page.wait_for_function(f"() => document.querySelector('{ANSWER}').textContent.length > 0")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".stream-status")).to_contain_text("stopped")
    assert "incomplete" in (page.locator(ANSWER).get_attribute("class") or "")
    cancelled_id = trace_id_on_page(page)
    screenshot(page, "playground-stopped")

    # 3. The traces list, filtered by status, shows the cancelled call.
    page.get_by_role("link", name="Traces").click()
    page.get_by_label("Status").select_option("cancelled")
    row_link = page.locator("#trace-list").get_by_role("link", name=re.compile(cancelled_id))
    for _ in range(100):  # the gateway writes the cancelled trace once it sees the hang-up
        page.get_by_role("button", name="Filter").click()
        page.locator("#trace-list").wait_for()
        if row_link.count():
            break
        page.wait_for_timeout(100)
    expect(row_link).to_be_visible()
    expect(page.locator("#trace-list tbody tr")).to_have_count(1)
    assert "status=cancelled" in page.url
    page.get_by_label("Status").select_option("")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#trace-list tbody tr")).to_have_count(2)
    expect(
        page.locator("#trace-list").get_by_role("link", name=re.compile(completed_id))
    ).to_be_visible()
    assert_text_contrast(page)
    screenshot(page, "traces")
    assert_fits_phone_width(page)

    # 4. The trace page: the attempt, the exclusion, estimated tokens, stored content.
    page.locator("#trace-list").get_by_role("link", name=re.compile(cancelled_id)).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(cancelled_id)
    expect(page.get_by_role("heading", level=1)).to_contain_text("cancelled")
    attempts = page.locator("#trace-attempts")
    expect(attempts.locator(".attempt")).to_have_count(1)
    expect(attempts.locator(".attempt")).to_contain_text("acme-fr-par")
    expect(attempts.locator(".attempt")).to_contain_text("cancelled")
    expect(attempts.locator(".excluded")).to_contain_text("bigcloud-us-east")
    expect(attempts.locator(".excluded")).to_contain_text("allow_classes")
    expect(page.get_by_text("the gateway (estimated)")).to_be_visible()
    content = page.locator("#trace-content")
    expect(content).to_contain_text("Keep going [[chunks=400;delay=50]]")
    expect(content).to_contain_text("Answer (as far as it got)")
    expect(content.locator(".answer.incomplete")).to_contain_text("tok0")
    assert_text_contrast(page)
    screenshot(page, "trace")
    assert_fits_phone_width(page)

    # 5. Usage counts both calls: one completed, one cancelled.
    page.get_by_role("link", name="Usage").click()
    totals = page.locator("#usage-totals")
    expect(totals.locator(".tile", has_text="Requests")).to_contain_text("2")
    expect(totals.locator(".tile", has_text="Completed")).to_contain_text("1")
    expect(totals.locator(".tile", has_text="Cancelled")).to_contain_text("1")
    figure = page.locator("#usage-status")
    expect(figure.get_by_role("img")).to_have_attribute(
        "aria-label", re.compile("1 completed, 1 cancelled")
    )
    figure.get_by_role("button", name="Show numbers").click()
    last_day = figure.locator("tbody tr").last
    expect(last_day.locator("td")).to_have_text(
        [re.compile(r"\d{4}-\d\d-\d\d"), "1", "1", "0", "0", "0", "2"]
    )
    figure.get_by_role("button", name="Show chart").click()
    expect(page.locator("#usage-by-model")).to_contain_text("fake")
    expect(page.locator("#usage-by-sovereignty-class")).to_contain_text("eu_sovereign")
    assert_text_contrast(page)
    screenshot(page, "usage")
    assert_fits_phone_width(page)

    trace = console.api("GET", f"/v1/platform/traces/{cancelled_id}", key=key)
    assert trace["status"] == "cancelled"


def test_a_broken_stream_is_shown_as_incomplete(page: Page, console: Console) -> None:
    sign_in(page, console, console.new_key("e2e-broken"))
    send_prompt(page, "Break [[fault=reset_mid_stream;chunks=20;delay=20]]")
    expect(page.locator(".stream-status")).to_contain_text("incomplete", timeout=30_000)
    assert "incomplete" in (page.locator(ANSWER).get_attribute("class") or "")
    expect(page.locator(".stream-status .badge")).not_to_have_text("complete")
    expect(page.get_by_text("Incomplete answer")).to_be_visible()
    trace = console.api("GET", f"/v1/platform/traces/{trace_id_on_page(page)}")
    assert trace["status"] == "failed"
    assert_text_contrast(page)
    screenshot(page, "playground-broken")


def test_the_playground_offers_only_what_the_key_may_use(page: Page, console: Console) -> None:
    sign_in(page, console, console.new_key("e2e-options", policy_id="eu-store"))
    documents = {d["policy_id"]: d for d in console.api("GET", "/v1/platform/policies")["data"]}
    own = parse_policy(json.dumps(documents["eu-store"]))
    usable = {
        p for p, d in documents.items() if own.widening_field(parse_policy(json.dumps(d))) is None
    }
    options = page.locator("#pg-policy option").evaluate_all("os => os.map(o => o.value)")
    assert options[0] == "eu-store"
    assert set(options) == usable
    assert {"eu", "open"}.isdisjoint(options)
    models = page.locator("#pg-model option").evaluate_all("os => os.map(o => o.value)")
    assert models == ["fake-model"]  # big-model runs only on a global endpoint


def test_a_tenant_sees_only_its_own_calls(page: Page, console: Console) -> None:
    other_trace = call(console, console.new_key("e2e-other"))

    sign_in(page, console, console.new_key("e2e-alone"))
    page.get_by_role("link", name="Traces").click()
    expect(page.get_by_text("No trace matches these filters.")).to_be_visible()
    expect(page.get_by_label("Key")).to_have_count(0)
    page.goto(f"{console.url}#/traces/{other_trace}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Trace not found")
    page.get_by_role("link", name="Usage").click()
    expect(page.get_by_text("No calls in this range.")).to_be_visible()


def test_the_trace_list_pages_with_the_cursor(page: Page, console: Console) -> None:
    key = console.new_key("e2e-pages")
    ids = [call(console, key, f"call {n}") for n in range(5)]
    sign_in(page, console, key)
    page.goto(f"{console.url}#/traces?limit=2")
    rows = page.locator("#trace-list tbody tr")
    more = page.get_by_role("button", name="Load more")
    expect(rows).to_have_count(2)
    more.click()
    expect(rows).to_have_count(4)
    expect(rows.nth(2).get_by_role("link")).to_be_focused()  # the keyboard stays on the new rows
    more.click()
    expect(rows).to_have_count(5)
    expect(more).to_be_hidden()
    shown = [
        TRACE_ID.search(n or "")
        for n in rows.get_by_role("link").evaluate_all(
            "as => as.map(a => a.getAttribute('aria-label'))"
        )
    ]
    assert [m.group(0) for m in shown if m] == ids[::-1]  # newest first, each once


def test_the_admin_filters_traces_by_key_model_and_time(page: Page, console: Console) -> None:
    key = console.new_key("e2e-filtered")
    key_id = console.api("GET", "/v1/platform/me", key=key)["id"]
    ids = [call(console, key) for _ in range(2)]
    sign_in(page, console, console.gateway.admin_key)
    page.get_by_role("link", name="Traces").click()
    page.get_by_label("Key").select_option(key_id)
    page.get_by_label("Model").fill("fake-model")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#trace-list tbody tr")
    expect(rows).to_have_count(2)
    for trace_id in ids:
        expect(page.get_by_role("link", name=re.compile(trace_id))).to_be_visible()
    assert f"key_id={key_id}" in page.url
    page.get_by_label("From").fill("2999-01-01T00:00")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No trace matches these filters.")).to_be_visible()
    page.get_by_label("From").fill("")
    page.get_by_label("Before").fill("2000-01-01T00:00")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No trace matches these filters.")).to_be_visible()
    page.get_by_role("link", name="Clear").click()
    expect(page.get_by_label("Key")).to_have_value("")


def test_the_key_stays_in_the_tab(page: Page, console: Console) -> None:
    page.goto(console.url)
    # The first screen says where a key comes from, before anyone has one.
    where = page.locator(".where-keys-come-from")
    expect(where).to_contain_text("llmeu serve")
    expect(where).to_contain_text("llmeu keys create")
    page.get_by_label("API key").fill("sk-llmeu-nope-wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("That key was not accepted.")
    key = console.new_key("e2e-session")
    sign_in(page, console, key)
    page.reload()
    expect(page.get_by_role("heading", name="Playground", level=1)).to_be_visible()
    other_tab = page.context.browser.new_context().new_page()  # type: ignore[union-attr]
    other_tab.goto(console.url)
    expect(other_tab.get_by_label("API key")).to_be_visible()
    other_tab.context.close()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    assert key not in page.url


def test_a_revoked_key_is_signed_out(page: Page, console: Console) -> None:
    key = console.new_key("e2e-revoked")
    sign_in(page, console, key)
    key_id = console.api("GET", "/v1/platform/me", key=key)["id"]
    console.api("DELETE", f"/v1/platform/keys/{key_id}")
    page.get_by_role("link", name="Usage").click()
    expect(page.get_by_role("alert")).to_have_text("Your key is no longer accepted.")
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0


def test_keyboard_navigation(page: Page, console: Console) -> None:
    sign_in(page, console, console.new_key("e2e-keyboard"))
    expect(page.get_by_role("heading", name="Playground", level=1)).to_be_focused()
    page.reload()
    page.get_by_role("heading", name="Playground", level=1).wait_for()
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    outline = skip.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    page.get_by_role("link", name="Usage").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Usage", level=1)).to_be_focused()
    expect(page.get_by_role("link", name="Usage")).to_have_attribute("aria-current", "page")
    page.get_by_role("link", name="Playground").focus()
    page.keyboard.press("Enter")
    page.get_by_label("Prompt", exact=True).fill("Quick [[chunks=3;text=**bold**]]")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".stream-status")).to_contain_text("complete")
    expect(page.locator(f"{ANSWER} strong")).to_have_count(3)  # the answer is rendered Markdown


def test_the_admin_manages_keys_and_policies(page: Page, console: Console) -> None:
    sign_in(page, console, console.gateway.admin_key)
    page.get_by_role("link", name="Keys").click()
    page.get_by_label("Name").fill("ci-tenant")
    page.get_by_label("Policy").select_option("eu-strict")
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_label("Secret")
    expect(secret).to_have_value(re.compile(r"^sk-llmeu-"))
    token = secret.input_value()
    row = page.locator("#key-list tr", has_text="ci-tenant")
    expect(row).to_contain_text("eu-strict")
    expect(row).to_contain_text("active")
    assert_every_control_is_labelled(page)
    assert_text_contrast(page)
    screenshot(page, "keys")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke ci-tenant").click()
    expect(row).to_contain_text("revoked")
    page.get_by_role("button", name="I have stored it").click()
    expect(page.get_by_label("Secret")).to_have_count(0)
    assert_fits_phone_width(page)

    page.get_by_role("link", name="Policies").click()
    new = page.get_by_role("form", name="New policy")
    new.get_by_label("Policy id").fill("fr-only")
    new.get_by_label("on_premise").uncheck()
    new.get_by_label("Allowed countries").fill("fr")
    new.get_by_label("Fall back").uncheck()
    new.get_by_label("Limited calls when limits cannot be checked").select_option("closed")
    new.get_by_role("button", name="Create policy").click()
    card = page.get_by_role("article", name="fr-only")
    expect(card).to_contain_text("FR")
    expect(card).to_contain_text("refuse limited calls")
    policy = console.api("GET", "/v1/platform/policies/fr-only")
    assert policy["allow_classes"] == ["eu_sovereign"]
    assert policy["allow_countries"] == ["FR"]
    assert policy["fallback"] is False
    assert policy["limits_fail"] == "closed"
    card.get_by_role("button", name="Edit fr-only").click()
    card.get_by_label("Gateway stores content for").fill("P2D")
    card.get_by_label("Required certifications").fill("secnumcloud")
    card.get_by_role("button", name="Save").click()
    expect(card).to_contain_text("P2D")
    expect(card).to_contain_text("secnumcloud")
    saved = console.api("GET", "/v1/platform/policies/fr-only")
    assert (saved["store_content"], saved["limits_fail"]) == ("P2D", "closed"), "an edit keeps it"
    assert saved["require_certifications"] == ["secnumcloud"]
    card.get_by_role("button", name="Edit fr-only").click()
    card.get_by_label("Required certifications").fill("")
    card.get_by_role("button", name="Save").click()
    expect(card).to_contain_text("Required certificationsnone")
    card.get_by_role("button", name="Edit fr-only").click()
    card.get_by_label("Longest provider retention").fill("thirty days")
    card.get_by_role("button", name="Save").click()
    expect(card.get_by_role("alert")).to_contain_text("max_retention")
    card.get_by_role("button", name="Cancel").click()
    assert_text_contrast(page)
    screenshot(page, "policies")
    assert_fits_phone_width(page)

    page.get_by_role("link", name="Routing map").click()
    matrix = page.get_by_role("region", name="Policy admission matrix")
    expect(matrix.locator("tr", has_text="acme-fr-par")).to_contain_text("admitted")
    header = [t.strip() for t in matrix.locator("thead th").all_inner_texts()]
    column = header.index("fr-only")
    cell = lambda endpoint: matrix.locator("tr", has_text=endpoint).locator("th, td").nth(column)  # noqa: E731
    expect(cell("acme-fr-par")).to_contain_text("admitted")
    expect(cell("nordlys-de-fra")).to_contain_text("excluded")
    expect(cell("bigcloud-us-east")).to_contain_text("excluded")
    card = page.get_by_role("listitem", name="bigcloud-us-east")
    expect(card).to_contain_text("US")
    expect(card).to_contain_text("healthy")
    expect(card).to_contain_text("Jurisdictionunknown")
    acme = page.get_by_role("listitem", name="acme-fr-par")
    expect(acme).to_contain_text("JurisdictionFR")
    expect(acme).to_contain_text("Certificationssecnumcloud")
    expect(acme).to_contain_text("SEALSEAL-3")
    assert_text_contrast(page)
    screenshot(page, "routing")
    assert_fits_phone_width(page)

    page.goto(console.url)
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("That key was not accepted.")


def refused_call(console: Console, key: str, model: str) -> str:
    """A call the gateway rejects; its trace id."""
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    try:
        console.api("POST", "/v1/chat/completions", key=key, body=body)
    except urllib.error.HTTPError as refused:
        return str(refused.headers["x-llmeu-trace-id"])
    raise AssertionError(f"`{model}` was answered")


def one_line(page: Page, selector: str) -> bool:
    return bool(page.evaluate(
        """(selector) => {
            const range = document.createRange();
            range.selectNodeContents(document.querySelector(selector));
            return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size === 1;
        }""",
        selector,
    ))  # fmt: skip


def test_usage_names_the_model_that_ran_and_rejected_calls_apart(
    page: Page, console: Console
) -> None:
    key = console.new_key("naming")
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    console.api("POST", "/v1/chat/completions", key=key, body=body)
    rejected_id = refused_call(console, key, "nope")
    sign_in(page, console, key)
    page.goto(f"{console.url}#/usage")
    totals = page.locator("#usage-totals")
    expect(totals.locator(".tile", has_text="Rejected")).to_contain_text("1")
    expect(totals.locator(".tile", has_text="Interrupted")).to_contain_text("0")
    tokens = totals.locator(".tile", has_text="Tokens in / out")
    expect(tokens).to_be_visible()
    assert one_line(page, "#usage-totals .tile.wide dd"), "the tokens card wraps at 1280 px"
    by_model = page.locator("#usage-by-model")
    expect(by_model.get_by_role("img")).to_have_attribute(
        "aria-label", re.compile(r"By model: .*Rejected \(no model ran\) 1")
    )
    assert "nope" not in (by_model.get_by_role("img").get_attribute("aria-label") or "")
    expect(page.locator("#usage-by-requested-model").get_by_role("img")).to_have_attribute(
        "aria-label", re.compile(r"(fake-model 1, nope 1|nope 1, fake-model 1)")
    )
    assert_text_contrast(page)
    screenshot(page, "usage-naming")
    assert_fits_phone_width(page)

    page.goto(f"{console.url}#/traces/{rejected_id}")
    where = page.get_by_role("region", name="Where it ran")
    expect(where).to_contain_text("eu-store")
    expect(where).to_contain_text("none: the call was rejected")


def test_a_period_without_cost_says_so(page: Page, console: Console) -> None:
    key = console.new_key("nothing-spent")
    refused_call(console, key, "nope")
    sign_in(page, console, key)
    page.goto(f"{console.url}#/usage")
    cost = page.locator("#usage-cost")
    expect(cost).to_contain_text("No cost in this period")
    expect(cost.get_by_role("img")).to_have_count(0)
    screenshot(page, "usage-no-cost")
