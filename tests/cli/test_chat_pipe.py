"""`llmeu chat` writing to a pipe: the answer exactly as sent, the rest on standard error."""

from __future__ import annotations

import json
import os
import subprocess

from tests.support.client_terminal import REPO, llmeu_command
from tests.support.client_wire_server import Reply, WireServer, sse

ANSWER = "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [x](https://e.org) **now**"


def content(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def run_chat(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("LLMEU_")}
    environment = {**inherited, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        llmeu_command("chat", *args),
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )


def test_answer_goes_to_stdout_as_sent_and_settings_come_from_the_environment() -> None:
    frames = sse(*[content(ANSWER[i : i + 3]) for i in range(0, len(ANSWER), 3)], "[DONE]")
    with WireServer(Reply(frames)) as server:
        env = {"LLMEU_BASE_URL": server.url, "LLMEU_API_KEY": "sk-env", "LLMEU_MODEL": "m1"}
        done = run_chat(["--policy", "eu-strict", "Hello"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    [seen] = server.requests
    assert seen.headers["authorization"] == "Bearer sk-env"
    body = json.loads(seen.body)
    assert body["model"] == "m1"
    assert body["llmeu"] == {"policy_id": "eu-strict"}
    assert body["messages"] == [{"role": "user", "content": "Hello"}]


def test_options_win_over_the_environment() -> None:
    with WireServer(Reply(sse(content("ok"), "[DONE]"))) as server:
        env = {"LLMEU_BASE_URL": "http://127.0.0.1:9/v1", "LLMEU_API_KEY": "sk-env"}
        done = run_chat(
            ["--base-url", server.url, "--api-key", "sk-opt", "--model", "m2", "q"], env
        )
    assert done.returncode == 0, done.stderr
    assert server.requests[0].headers["authorization"] == "Bearer sk-opt"
    assert json.loads(server.requests[0].body)["model"] == "m2"


def test_broken_stream_keeps_the_text_and_fails() -> None:
    with WireServer(Reply(sse(content("partial ans")), cut=True)) as server:
        done = run_chat(["--base-url", server.url, "q"])
    assert done.returncode == 1
    assert done.stdout == "partial ans\n"
    assert "incomplete answer" in done.stderr
    assert "the answer above is partial" in done.stderr


def test_nothing_listening_is_a_clear_error() -> None:
    done = run_chat(["--base-url", "http://127.0.0.1:9/v1", "q"])
    assert done.returncode == 1
    assert done.stdout == ""
    assert "http://127.0.0.1:9/v1: could not reach the server" in done.stderr


def test_server_text_is_never_read_as_rich_markup() -> None:
    error = {"error": {"message": "bad [/] tag [bold]x[/bold]", "code": "[DONE]"}}
    with WireServer(Reply(sse(content("a"), json.dumps(error)))) as server:
        done = run_chat(["--base-url", server.url, "q"])
    assert done.returncode == 1
    assert "the server broke off the answer: bad [/] tag [bold]x[/bold] ([DONE])" in done.stderr
