"""The console's JavaScript modules, run in Chromium and held to the Python client's rules.

Each table states what the module must do; where the Python side has the
same function (the SSE decoder, the Markdown hold-back, policy widening),
the JavaScript is also compared with it on generated input.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from llmeu.cli.money import money
from llmeu.client.markdown import split_markdown
from llmeu.protocol.sse import SSEDecoder
from llmeu.routing.config_file import parse_policy
from llmeu.routing.durations import Duration
from tests.client.test_markdown import CASES as MARKDOWN_CASES
from tests.console.conftest import Console


@pytest.fixture(scope="module")
def js(browser: Browser, console: Console) -> Iterator[Page]:
    """One tab on the console's origin (not signed in), shared by the table rows."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(console.url)
    yield page
    context.close()


def run_sse(js: Page, chunks: list[bytes]) -> list[dict[str, Any]]:
    """Feed `chunks` to the JavaScript SSEDecoder, then close it; all events in order."""
    return js.evaluate(  # type: ignore[no-any-return]
        """async (chunks) => {
            const { SSEDecoder } = await import("/console/sse.js");
            const decoder = new SSEDecoder();
            const events = [];
            for (const chunk of chunks) events.push(...decoder.feed(new Uint8Array(chunk)));
            events.push(...decoder.close());
            return events.map(({ event, data, id, retry }) => ({ event, data, id, retry }));
        }""",
        [list(chunk) for chunk in chunks],
    )


def python_sse(chunks: list[bytes]) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.close()
    return [{"event": e.event, "data": e.data, "id": e.id, "retry": e.retry} for e in events]


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def message(data: str, id: str = "", event: str = "message") -> dict[str, Any]:
    return {"event": event, "data": data, "id": id, "retry": None}


SSE_CASES = [
    pytest.param([b"data: a\n\n"], [message("a")], id="one-event"),
    pytest.param(split_every(b"data: hello\n\ndata: world\n\n", 1), [message("hello"), message("world")], id="split-every-byte"),
    pytest.param([b"data: caf\xc3", b"\xa9 \xe2\x82", b"\xac \xf0\x9f\x98", b"\x80\n\n"], [message("café € 😀")], id="utf8-split-inside-characters"),
    pytest.param([b"data: a\r\n\r\ndata: b\r\n\r\n"], [message("a"), message("b")], id="crlf"),
    pytest.param([b"data: a\r\rdata: b\r\r"], [message("a"), message("b")], id="cr-only"),
    pytest.param([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"], [message("a"), message("b")], id="crlf-split-across-reads"),
    pytest.param([b"\xef\xbb\xbfdata: bom\n\n"], [message("bom")], id="leading-bom-dropped"),
    pytest.param([b": keep-alive\n\ndata: x\n\n"], [message("x")], id="comment-ignored"),
    pytest.param([b"data: one\ndata: two\n\n"], [message("one\ntwo")], id="data-lines-joined"),
    pytest.param([b"data:no-space\n\n"], [message("no-space")], id="no-space-after-colon"),
    pytest.param([b"data:  two-spaces\n\n"], [message(" two-spaces")], id="only-one-space-stripped"),
    pytest.param([b"event: error\ndata: {}\n\n"], [message("{}", event="error")], id="event-type"),
    pytest.param([b"id: 7\ndata: a\n\ndata: b\n\n"], [message("a", "7"), message("b", "7")], id="last-event-id-persists"),
    pytest.param([b"id: a\x00b\ndata: a\n\n"], [message("a")], id="id-with-nul-ignored"),
    pytest.param([b"retry: 12x\ndata: a\n\nretry: 30\ndata: b\n\n"], [message("a"), {**message("b"), "retry": 30}], id="retry-digits-only"),
    pytest.param([b"event: ping\n\n"], [], id="no-data-no-event"),
    pytest.param([b"data: done\n\ndata: unterminated"], [message("done")], id="unterminated-last-event-dropped"),
    pytest.param([b"data: \xff\n\n"], [message("\ufffd")], id="invalid-utf8-replaced"),
]  # fmt: skip


@pytest.mark.parametrize(("chunks", "expected"), SSE_CASES)
def test_sse_decoder(js: Page, chunks: list[bytes], expected: list[dict[str, Any]]) -> None:
    assert python_sse(chunks) == expected, "the table disagrees with the Python decoder"
    assert run_sse(js, chunks) == expected


def test_sse_decoder_matches_python_on_random_splits(js: Page) -> None:
    rng = random.Random(7)
    pieces = [b"data: ", b"d\xc3\xa9j\xc3\xa0", b"\xf0\x9f\x8c\x8d", b"\n", b"\r", b"\r\n", b"id: 3",
              b"event: x", b": c", b"retry: 5", b"\xef\xbb\xbf", b"data:", b"[DONE]", b" "]  # fmt: skip
    streams = []
    for _ in range(150):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data), rng.randint(0, 6))))
        streams.append([data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)])
    got = js.evaluate(
        """async (streams) => {
            const { SSEDecoder } = await import("/console/sse.js");
            return streams.map((chunks) => {
                const decoder = new SSEDecoder();
                const events = [];
                for (const chunk of chunks) events.push(...decoder.feed(new Uint8Array(chunk)));
                events.push(...decoder.close());
                return events.map(({ event, data, id, retry }) => ({ event, data, id, retry }));
            });
        }""",
        [[list(c) for c in chunks] for chunks in streams],
    )
    assert got == [python_sse(chunks) for chunks in streams]


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}  # fmt: skip
    return b"data: " + json.dumps(body).encode() + b"\n\n"


ROUTING = {"trace_id": "trc_1", "provider": "acme", "sovereignty_class": "eu_sovereign"}
ROLE = (
    b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}\n\n'
)
WHOLE = (
    ROLE
    + chunk("Bon")
    + chunk("jour é😀")
    + chunk(finish="stop", llmeu=ROUTING)
    + b"data: [DONE]\n\n"
)
ERROR = b'data: {"error": {"message": "upstream reset", "type": "upstream_error"}, "llmeu": {"trace_id": "trc_2"}}\n\n'

STREAM_CASES = [
    pytest.param([WHOLE], {"content": "Bonjour é😀", "complete": True, "state": "done", "finishReason": "stop"}, id="complete"),
    pytest.param(split_every(WHOLE, 1), {"content": "Bonjour é😀", "complete": True}, id="split-every-byte"),
    pytest.param(split_every(WHOLE, 3), {"content": "Bonjour é😀", "complete": True}, id="split-utf8"),
    pytest.param([WHOLE.replace(b"\n", b"\r\n")], {"content": "Bonjour é😀", "complete": True}, id="crlf"),
    pytest.param([WHOLE.replace(b"\n", b"\r")], {"content": "Bonjour é😀", "complete": True}, id="cr"),
    pytest.param([ROLE + chunk("Bon") + chunk(finish="stop")], {"content": "Bon", "complete": False, "state": "open", "problem": "the stream ended without [DONE]"}, id="missing-done"),
    pytest.param([ROLE + chunk("Bon") + ERROR], {"content": "Bon", "complete": False, "state": "error", "problem": "upstream reset", "llmeu": {"trace_id": "trc_2"}}, id="error-frame"),
    pytest.param([ROLE + chunk("Bon") + ERROR + b"data: [DONE]\n\n"], {"complete": False, "state": "error"}, id="done-after-error-changes-nothing"),
    pytest.param([ROLE + b"event: error\ndata: {\"error\": {\"message\": \"boom\"}}\n\n"], {"complete": False, "state": "error", "problem": "boom"}, id="error-event"),
    pytest.param([ROLE + b"data: {not json\n\n" + b"data: [DONE]\n\n"], {"complete": False, "state": "malformed"}, id="malformed-frame"),
    pytest.param([ROLE + chunk("[DONE]") + b"data: [DONE]\n\n"], {"content": "[DONE]", "complete": True}, id="done-in-text-is-text"),
    pytest.param([ROLE + b": ping\n\nevent: ping\ndata: x\n\n" + chunk("a") + b"data: [DONE]\n\n"], {"content": "a", "complete": True}, id="keep-alives-ignored"),
    pytest.param([ROLE + chunk("a") + b"data: [DONE]\n\n" + chunk("late")], {"content": "a", "complete": True}, id="after-done-ignored"),
    pytest.param([chunk("a") + chunk(None, None, choices=[], usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}) + b"data: [DONE]\n\n"], {"usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}, id="usage-frame"),
    pytest.param([ROLE + chunk("a") + b"data: [DONE]\n\n"], {"usage": None, "llmeu": None}, id="missing-usage-is-null-not-zero"),
]  # fmt: skip


@pytest.mark.parametrize(("chunks", "expected"), STREAM_CASES)
def test_chat_stream(js: Page, chunks: list[bytes], expected: dict[str, Any]) -> None:
    result = js.evaluate(
        """async (chunks) => {
            const { readChatStream } = await import("/console/chatstream.js");
            const body = new ReadableStream({
                start(controller) {
                    for (const chunk of chunks) controller.enqueue(new Uint8Array(chunk));
                    controller.close();
                },
            });
            const deltas = [];
            const result = await readChatStream(new Response(body), { onText: (t) => deltas.push(t) });
            return { ...result, deltas };
        }""",
        [list(c) for c in chunks],
    )
    assert {name: result[name] for name in expected} == expected
    assert "".join(result["deltas"]) == result["content"]


def test_a_stopped_read_is_aborted_and_incomplete(js: Page) -> None:
    """Stop aborts the fetch: the body read rejects with AbortError mid-stream."""
    result = js.evaluate(
        """async (first) => {
            const { readChatStream } = await import("/console/chatstream.js");
            let source;
            const body = new ReadableStream({
                start(controller) {
                    source = controller;
                    controller.enqueue(new Uint8Array(first));  // and never closes: a live stream
                },
            });
            return await readChatStream(new Response(body), {
                onText: () => source.error(new DOMException("The user aborted a request.", "AbortError")),
            });
        }""",
        list(ROLE + chunk("partial")),
    )
    assert result["content"] == "partial"
    assert result["aborted"] is True
    assert result["complete"] is False


def test_a_dropped_connection_is_incomplete(js: Page) -> None:
    result = js.evaluate(
        """async (first) => {
            const { readChatStream } = await import("/console/chatstream.js");
            const body = new ReadableStream({
                start(controller) {
                    controller.enqueue(new Uint8Array(first));
                    setTimeout(() => controller.error(new TypeError("network error")), 0);
                },
            });
            return await readChatStream(new Response(body));
        }""",
        list(ROLE + chunk("partial")),
    )
    assert result["content"] == "partial"
    assert result["complete"] is False
    assert result["aborted"] is False
    assert "connection broke" in result["problem"]


@pytest.mark.parametrize(("text", "settled", "live", "held"), MARKDOWN_CASES)
def test_markdown_hold_back(js: Page, text: str, settled: str, live: str, held: str) -> None:
    split = js.evaluate(
        "async (text) => (await import('/console/markdown.js')).splitMarkdown(text)", text
    )
    assert split == {"settled": settled, "live": live, "held": held}


def test_markdown_hold_back_matches_python_on_generated_text(js: Page) -> None:
    rng = random.Random(11)
    alphabet = ["\n", "\n\n", "- ", "1. ", "```", "~~~", "|", "---", "#", "[", "]", "(", ")",
                "`", "**", "\\", " ", "  ", "word", "x", "|---|", ":", "=", "> ", "    ", "é"]  # fmt: skip
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(600)]
    got = js.evaluate(
        """async (texts) => {
            const { splitMarkdown } = await import("/console/markdown.js");
            return texts.map((t) => splitMarkdown(t));
        }""",
        texts,
    )
    expected = [
        {"settled": s.settled, "live": s.live, "held": s.held} for s in map(split_markdown, texts)
    ]
    mismatches = [(t, g, e) for t, g, e in zip(texts, got, expected, strict=True) if g != e]
    assert mismatches == []


RENDER_CASES = [
    pytest.param("Hello **bold** and *em* and `code`", "<p>Hello <strong>bold</strong> and <em>em</em> and <code>code</code></p>", id="inline"),
    pytest.param("# Title\n\ntext", "<h3>Title</h3><p>text</p>", id="heading-below-the-page-headings"),
    pytest.param("- a\n- b", "<ul><li>a</li><li>b</li></ul>", id="list"),
    pytest.param("3. a\n4. b", '<ol start="3"><li>a</li><li>b</li></ol>', id="ordered-list-start"),
    pytest.param("```py\nx = 1 < 2\n```", '<pre><code data-language="py">x = 1 &lt; 2</code></pre>', id="code-fence"),
    pytest.param("| a | b |\n|---|--:|\n| 1 | 2 |", '<div class="md-table"><table><thead><tr><th scope="col">a</th><th scope="col" class="align-right">b</th></tr></thead><tbody><tr><td>1</td><td class="align-right">2</td></tr></tbody></table></div>', id="table"),
    pytest.param("[docs](https://example.eu/a)", '<p><a href="https://example.eu/a" rel="noopener noreferrer" target="_blank">docs</a></p>', id="link"),
    pytest.param("[x](javascript:alert%281%29)", "<p>x</p>", id="script-link-dropped"),
    pytest.param("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>", id="html-is-text"),
    pytest.param("![alt](https://tracker.example/p.png)", "<p>alt</p>", id="images-not-loaded"),
    pytest.param("snake_case_name", "<p>snake_case_name</p>", id="intraword-underscore"),
    pytest.param("> quoted", "<blockquote><p>quoted</p></blockquote>", id="blockquote"),
    pytest.param("a\n\n---\n\nb", "<p>a</p><hr><p>b</p>", id="rule"),
]  # fmt: skip


@pytest.mark.parametrize(("markdown", "html"), RENDER_CASES)
def test_markdown_render(js: Page, markdown: str, html: str) -> None:
    rendered = js.evaluate(
        """async (text) => {
            const { renderMarkdown } = await import("/console/markdown.js");
            const div = document.createElement("div");
            div.append(renderMarkdown(text));
            return div.innerHTML;
        }""",
        markdown,
    )
    assert rendered == html


def test_streamed_markdown_never_redraws_what_settled(js: Page) -> None:
    """Fed a character at a time, settled blocks stay the same nodes; the end shows all."""
    text = "# Plan\n\nFirst **bold** step.\n\n```js\nlet a = 1;\n```\n\n| k | v |\n|---|---|\n| a | 1 |\n\nSee [docs](https://example.eu)."
    result = js.evaluate(
        """async (text) => {
            const { MarkdownView, renderMarkdown, splitMarkdown } = await import("/console/markdown.js");
            const box = document.createElement("div");
            const view = new MarkdownView(box);
            let kept = [];
            let redrawn = 0;
            let heldShown = 0;
            for (let i = 1; i <= text.length; i += 1) {
                const split = view.update(text.slice(0, i));
                const nodes = [...view.settled.childNodes];
                if (kept.some((node, k) => nodes[k] !== node)) redrawn += 1;
                kept = nodes;
                if (split.held && view.shown.endsWith(split.held)) heldShown += 1;
            }
            view.finish(text);
            const whole = document.createElement("div");
            whole.append(renderMarkdown(text));
            return { redrawn, heldShown, settledBlocks: kept.length, shown: box.textContent, whole: whole.textContent };
        }""",
        text,
    )
    assert result["redrawn"] == 0
    assert result["heldShown"] == 0
    assert result["settledBlocks"] >= 4
    assert result["shown"] == result["whole"]


def test_policy_widening_matches_python(js: Page, console: Console) -> None:
    extra = [
        {"policy_id": "fr-only", "allow_classes": ["eu_sovereign"], "allow_countries": ["FR"],
         "allow_providers": [], "max_retention": "P0D", "store_content": "P0D", "fallback": False},
        {"policy_id": "acme-week", "allow_classes": ["eu_sovereign", "on_premise"], "allow_countries": [],
         "allow_providers": ["acme"], "max_retention": "P1W", "store_content": "PT12H", "fallback": True},
        # Every rule of the predicate table is compared: jurisdictions, certifications, SEAL.
        {"policy_id": "fr-de-law", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "require_jurisdictions": ["FR", "DE"]},
        {"policy_id": "fr-law-seal3", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "require_jurisdictions": ["FR"], "min_seal": 3},
        {"policy_id": "seal2", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "min_seal": 2},
        {"policy_id": "secnum", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "require_certifications": ["secnumcloud"]},
        {"policy_id": "secnum-c5", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "require_certifications": ["secnumcloud", "bsi-c5"], "min_seal": 2},
        # The hosted tools a call may send: a list where more is looser, none by default.
        {"policy_id": "web", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "allow_hosted_tools": ["web_search"]},
        {"policy_id": "web-files", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "allow_hosted_tools": ["web_search", "file_search"], "hosted_tools": "reject"},
        # Tool servers and tools by pattern: a plain name narrows a pattern that matches it.
        {"policy_id": "crm-tools", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "allow_mcp_servers": ["crm*"], "allow_tools": ["crm__*", "docs__search"]},
        {"policy_id": "crm-lookup", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "allow_mcp_servers": ["crm-eu"], "allow_tools": ["crm__lookup"]},
        {"policy_id": "crm-get", "allow_classes": ["eu_sovereign", "on_premise"], "max_retention": "P0D",
         "allow_mcp_servers": ["crm*"], "allow_tools": ["crm__get?"]},
    ]  # fmt: skip
    documents = console.api("GET", "/v1/platform/policies")["data"] + extra
    python = {d["policy_id"]: parse_policy(json.dumps(d)) for d in documents}
    expected = {f"{a}>{b}": python[a].widening_field(python[b]) for a in python for b in python}
    got = js.evaluate(
        """async (docs) => {
            const { wideningField } = await import("/console/policy.js");
            const out = {};
            for (const a of docs) for (const b of docs) out[`${a.policy_id}>${b.policy_id}`] = wideningField(a, b);
            return out;
        }""",
        documents,
    )
    assert got == expected


@pytest.mark.parametrize("text", ["P0D", "P30D", "PT12H", "P1Y2M", "P1W", "PT90M", "P1DT1S"])
def test_durations_match_python(js: Page, text: str) -> None:
    seconds = js.evaluate(
        "async (t) => (await import('/console/policy.js')).durationSeconds(t)", text
    )
    assert seconds == Duration.parse(text).seconds


@pytest.mark.parametrize(
    "amount", [0, 0.0012, 0.0000123, 0.00012345, 0.5, 0.01, 0.9999, 1234.567, -0.25, 1e-9]
)
def test_money_reads_as_in_the_command_line(js: Page, amount: float) -> None:
    shown = js.evaluate(
        """async (amount) => (await import("/console/dom.js")).fmtEur(amount)""", amount
    )
    assert shown == money(amount)
