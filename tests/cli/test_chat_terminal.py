"""`llmeu chat` in a real terminal (tmux, 100x30): what a person sees.

The server is the scripted wire server, so every answer, and every way an
answer can break, is known in advance. The gateway end of Ctrl-C (the call
recorded as cancelled) is tested against `llmeu serve` in test_chat_gateway.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.client_terminal import Terminal, llmeu_command, tmux_available
from tests.support.client_wire_server import Reply, WireServer, sse

pytestmark = pytest.mark.skipif(not tmux_available(), reason="needs tmux")

ROUTING = {
    "trace_id": "trc_0123",
    "provider": "scaleway",
    "inference_region": "fr-par",
    "sovereignty_class": "eu_sovereign",
    "policy_id": "eu-strict",
    "cost_estimate": {"currency": "EUR", "amount": 0.0000123, "estimated": False},
}
ROLE = json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
ANSWER = (
    "# Fruit report\n\n"
    "| fruit | colour |\n|---|---|\n| apple | red |\n| banana | yellow |\n\n"
    "```python\nprint('ripe')\n```\n\n"
    "See [the guide](https://example.org/guide) for more."
)


def content(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def pieces(text: str, size: int = 4) -> list[str]:
    return [content(text[i : i + size]) for i in range(0, len(text), size)]


def final(**top: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], **top})


USAGE = json.dumps({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 30}})


def chat(server: WireServer, *args: str) -> list[str]:
    return llmeu_command("chat", "--base-url", server.url, "--api-key", "sk-t", *args)


def run_to_end(reply: Reply, *args: str) -> tuple[int, str, WireServer]:
    """Run `llmeu chat ARGS` against `reply` until it exits: status, screen, server."""
    with WireServer(reply) as server, Terminal(chat(server, *args)) as term:
        return term.exit_status(), term.screen(), server


@pytest.fixture
def answer_server() -> Iterator[WireServer]:
    frames = sse(ROLE, *pieces(ANSWER), final(llmeu=ROUTING), USAGE, "[DONE]")
    with WireServer(Reply(frames)) as server:
        yield server


def test_one_shot_answer_renders_as_markdown_with_where_it_ran(answer_server: WireServer) -> None:
    with Terminal(chat(answer_server, "--model", "m", "Tell me about fruit")) as term:
        status = term.exit_status()
        screen = term.screen()
    assert status == 0
    assert "Fruit report" in screen and "# Fruit" not in screen
    assert re.search(r"^ *fruit +colour$", screen, re.MULTILINE)
    assert re.search(r"^ *─{10,}$", screen, re.MULTILINE)
    assert re.search(r"^ *banana +yellow$", screen, re.MULTILINE)
    assert "|" not in screen
    assert "print('ripe')" in screen and "```" not in screen
    assert "the guide" in screen and "](https://" not in screen
    where, speed = screen.splitlines()[-2:]
    assert where == "— scaleway · fr-par · eu_sovereign · policy eu-strict · €0.0000123"
    assert re.fullmatch(r"  30 tokens · TTFT \d+ ms · TPOT [\d.]+ ms · trace trc_0123", speed)


HELD = [
    pytest.param("Intro line.\n| name | size |\n", "Intro line.", "name", id="table-header"),
    pytest.param("Intro line. See [the docs](https://exa", "Intro line.", "the docs", id="link"),
    pytest.param("Intro line. It is **very", "Intro line.", "very", id="strong"),
    pytest.param("Intro.\n\n```python\nprint(1)\n``", "print(1)", "``", id="closing-fence"),
]


@pytest.mark.parametrize(("delta", "visible", "held"), HELD)
def test_half_written_constructs_are_held_back(delta: str, visible: str, held: str) -> None:
    # One delta, and `visible` is drawn in the same update as the held part
    # would be: once it is on screen, the held part would be too.
    reply = Reply(sse(ROLE, content(delta)), hold=30)
    with WireServer(reply) as server, Terminal(chat(server, "q")) as term:
        while_streaming = term.wait_for(visible)
        term.send("C-c")
        assert term.exit_status() == 130
        after = term.screen()
    assert held not in while_streaming
    # Once the answer is over, whatever arrived is shown, finished or not.
    assert held in after


def test_ctrl_c_cancels_and_hangs_up() -> None:
    with WireServer(Reply(sse(ROLE, content("Once upon a time")), hold=30)) as server:
        with Terminal(chat(server, "A long story")) as term:
            term.wait_for("Once upon a time")
            term.send("C-c")
            status = term.exit_status()
            screen = term.screen()
        [seen] = server.requests
        seen.reply_over.wait(30)
    assert status == 130
    # Once: neither the echoed ^C nor a redraw may leave a stale copy behind.
    assert screen.count("Once upon a time") == 1
    assert "⏹ cancelled — the answer above is partial" in screen
    assert seen.client_left.is_set()


def test_stream_without_done_is_shown_as_incomplete() -> None:
    status, screen, _ = run_to_end(Reply(sse(ROLE, content("The answer is 4"), final())), "2+2?")
    assert status == 1
    assert "The answer is 4" in screen
    assert "✗ incomplete answer: the stream ended without [DONE]" in screen
    assert "the answer above is partial" in screen
    assert "TTFT" not in screen


def test_error_frame_is_shown_with_the_text_received() -> None:
    error = {"error": {"message": "upstream reset", "type": "api_error", "code": "upstream_error"}}
    frames = sse(ROLE, content("Half of"), json.dumps({**error, "llmeu": ROUTING}))
    with WireServer(Reply(frames)) as server, Terminal(chat(server, "q")) as term:
        status = term.exit_status()
        screen = term.screen()
    assert status == 1
    assert "Half of" in screen
    assert "✗ the server broke off the answer: upstream reset (upstream_error)" in screen
    assert "the answer above is incomplete" in screen
    assert "trace trc_0123" in screen


def test_http_error_is_shown() -> None:
    body = {"error": {"message": "policy forbids", "type": "permission_error",
                      "code": "no_compliant_route"}}  # fmt: skip
    reply = Reply([json.dumps(body).encode()], status=403, content_type="application/json")
    status, screen, server = run_to_end(reply, "--policy", "eu-strict", "q")
    assert status == 1
    assert "✗ HTTP 403: policy forbids (no_compliant_route)" in screen
    assert json.loads(server.requests[0].body)["llmeu"] == {"policy_id": "eu-strict"}


def test_conversation_keeps_history_and_ctrl_d_quits() -> None:
    def reply(seen: Any) -> Reply:
        turn = sum(m["role"] == "user" for m in json.loads(seen.body)["messages"])
        return Reply(sse(ROLE, content(f"Answer number {turn}."), final(), "[DONE]"))

    with WireServer(reply) as server:
        with Terminal(chat(server, "--system", "Be brief.")) as term:
            term.wait_for("you>")
            term.type("first question")
            term.send("Enter")
            term.wait_for("Answer number 1.")
            term.type("second question")
            term.send("Enter")
            term.wait_for("Answer number 2.")
            term.send("C-d")
            status = term.exit_status()
        second = json.loads(server.requests[1].body)["messages"]
    assert status == 0
    assert second == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "Answer number 1."},
        {"role": "user", "content": "second question"},
    ]


def test_cancelled_turn_is_left_out_of_the_history() -> None:
    def reply(seen: Any) -> Reply:
        last = json.loads(seen.body)["messages"][-1]["content"]
        if last == "stall":
            return Reply(sse(ROLE, content("Thinking about it")), hold=30)
        return Reply(sse(ROLE, content("Fine."), final(), "[DONE]"))

    with WireServer(reply) as server:
        with Terminal(chat(server)) as term:
            term.wait_for("you>")
            term.type("stall")
            term.send("Enter")
            term.wait_for("Thinking about it")
            term.send("C-c")
            term.wait_for("cancelled")
            term.type("again")
            term.send("Enter")
            term.wait_for("Fine.")
            term.type("/exit")
            term.send("Enter")
            assert term.exit_status() == 0
        messages = json.loads(server.requests[1].body)["messages"]
    assert messages == [{"role": "user", "content": "again"}]


def turn_reply(seen: Any) -> Reply:
    last = json.loads(seen.body)["messages"][-1]["content"]
    return Reply(sse(ROLE, content(f"You said {last}."), final(), "[DONE]"))


def test_ctrl_c_at_the_prompt_clears_the_line_and_keeps_the_conversation() -> None:
    # A Ctrl-C meant for an answer that had already ended lands on the prompt.
    with WireServer(turn_reply) as server, Terminal(chat(server)) as term:
        term.wait_for("you>")
        term.type("first")
        term.send("Enter")
        term.wait_for("You said first.")
        term.type("half a thou")
        term.send("C-c")
        term.wait_for("Ctrl-C again or Ctrl-D to quit")
        term.type("second")
        term.send("Enter")
        term.wait_for("You said second.")
        term.send("C-d")
        assert term.exit_status() == 0
        messages = json.loads(server.requests[1].body)["messages"]
    assert [m["content"] for m in messages] == ["first", "You said first.", "second"]


def test_two_ctrl_c_in_a_row_at_the_prompt_quit() -> None:
    with WireServer(turn_reply) as server, Terminal(chat(server)) as term:
        term.wait_for("you>")
        term.send("C-c")
        # As a person does: the second press after the first was taken. (Two SIGINTs
        # that land before Python runs its handler are one KeyboardInterrupt.)
        term.wait_for("Ctrl-C again or Ctrl-D to quit")
        term.send("C-c")
        assert term.exit_status() == 0
    assert server.requests == []
