"""`llmeu chat`: ask a model through llmeu (or any OpenAI-compatible server) in a terminal.

With a PROMPT it answers once and exits; without one it holds a conversation
until Ctrl-D, `/exit`, or Ctrl-C twice within a second at the prompt (once
clears the line, as in a shell). The answer is rendered live as Markdown; constructs
that are still being written are held back (`llmeu.client.markdown`) so the
layout does not jump, and finished blocks are printed once, above a live
region that only holds the block being written.

What the terminal shows after the answer, on standard error: where the call
ran (provider, region, sovereignty class, policy), its cost, TTFT and TPOT.
Ctrl-C during an answer hangs up at once (the gateway then stops the upstream
and records the call as cancelled) and says so; a broken stream is shown as
incomplete with the text received, never as a normal answer.

When standard output is not a terminal, the answer is written as plain text
as it arrives, so `llmeu chat "…" > answer.md` keeps exactly what the model
sent. Exit status: 0 for a complete answer, 1 for an error or an incomplete
answer, 130 when Ctrl-C cancelled a one-shot answer.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from rich.console import Console, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.spinner import Spinner
from rich.text import Text

from llmeu.cli.gateway_address import DEFAULT_BASE_URL, gateway_address
from llmeu.cli.money import money
from llmeu.client import (
    APIConnectionError,
    APIStatusError,
    ChatResult,
    Client,
    ContentDelta,
    IncompleteStreamError,
    StreamError,
)
from llmeu.client.markdown import split_markdown

try:
    import termios
except ImportError:  # not on Windows
    termios = None  # type: ignore[assignment]

DEFAULT_MODEL = "local"
"""The bundled model's alias, so that `llmeu chat` answers against a bare `llmeu serve`."""
QUIT_WINDOW = 1.0
"""Seconds within which a second Ctrl-C at the prompt quits."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("chat", help="chat with a model through the gateway")
    parser.add_argument("prompt", nargs="?", help="ask once and exit (default: a conversation)")
    parser.add_argument(
        "--base-url",
        help=f"the gateway, its root or …/v1 (env LLMEU_BASE_URL or OPENAI_BASE_URL, "
        f"default {DEFAULT_BASE_URL})",
    )
    parser.add_argument("--api-key", help="API key (env LLMEU_API_KEY or OPENAI_API_KEY)")
    parser.add_argument(
        "--model",
        default=os.environ.get("LLMEU_MODEL", DEFAULT_MODEL),
        help="model alias (env LLMEU_MODEL, default %(default)s)",
    )
    parser.add_argument("--policy", help="a stricter policy for these calls (llmeu.policy_id)")
    parser.add_argument("--system", help="a system message to start the conversation with")
    parser.add_argument("--max-tokens", type=int, help="longest answer, in tokens")
    parser.add_argument(
        "--api",
        choices=("chat", "responses"),
        default="chat",
        help="the API to speak: chat completions or the Responses API (default %(default)s)",
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class ChatSettings:
    base_url: str
    api_key: str | None
    model: str
    policy: str | None
    max_tokens: int | None
    api: str = "chat"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ChatSettings:
        address = gateway_address(args.base_url, args.api_key, os.environ)
        return cls(
            address.api_root, address.api_key, args.model, args.policy, args.max_tokens,
            getattr(args, "api", "chat"),
        )  # fmt: skip


class Outcome(IntEnum):
    """How one answer ended; also the exit status of a one-shot call."""

    COMPLETE = 0
    FAILED = 1
    CANCELLED = 130


def run(args: argparse.Namespace) -> int:
    settings = ChatSettings.from_args(args)
    out, err = Console(), Console(stderr=True)
    messages: list[dict[str, str]] = []
    if args.system:
        messages.append({"role": "system", "content": args.system})
    with Client(settings.base_url, settings.api_key) as client:
        if args.prompt is not None:
            messages.append({"role": "user", "content": args.prompt})
            return int(ask(client, settings, messages, out, err)[0])
        return converse(client, settings, messages, out, err)


def converse(
    client: Client,
    settings: ChatSettings,
    messages: list[dict[str, str]],
    out: Console,
    err: Console,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """The interactive loop. A cancelled or failed exchange is left out of the history.

    At the prompt, Ctrl-C clears the line, as in a shell: a Ctrl-C meant for an
    answer that ended just before it landed must not end the conversation. A
    second Ctrl-C within `QUIT_WINDOW` seconds, Ctrl-D or `/exit` quits.
    """
    err.print(
        f"[dim]llmeu chat · {escape(settings.model)} at {escape(settings.base_url)} · "
        "Ctrl-C cancels an answer or clears the line · Ctrl-D or /exit quits[/]"
    )
    interrupted_at = -math.inf
    while True:
        try:
            prompt = out.input("[bold cyan]you>[/] ")
        except EOFError:
            out.print()
            return 0
        except KeyboardInterrupt:
            out.print()
            now = clock()
            if now - interrupted_at <= QUIT_WINDOW:
                return 0
            interrupted_at = now
            err.print("[dim](Ctrl-C again or Ctrl-D to quit)[/]")
            continue
        if prompt.strip() in ("/exit", "/quit"):
            return 0
        if not prompt.strip():
            continue
        messages.append({"role": "user", "content": prompt})
        try:
            status, result = ask(client, settings, messages, out, err)
        except KeyboardInterrupt:  # landed between the end of the stream and the prompt
            status, result = Outcome.CANCELLED, None
        if status == Outcome.COMPLETE and result is not None:
            messages.append({"role": "assistant", "content": result.content})
        else:
            messages.pop()


def ask(
    client: Client,
    settings: ChatSettings,
    messages: list[dict[str, str]],
    out: Console,
    err: Console,
) -> tuple[Outcome, ChatResult | None]:
    """Stream one answer to the terminal and report how it ended."""
    view = LiveAnswer(out)
    params: dict[str, Any] = {}
    responses = settings.api == "responses"
    if settings.max_tokens is not None:
        params["max_output_tokens" if responses else "max_tokens"] = settings.max_tokens
    open_stream = client.stream_response if responses else client.stream_chat
    stream = open_stream(messages, model=settings.model, policy=settings.policy, **params)
    try:
        with view, stream:
            result: ChatResult | None = None
            for item in stream:
                if isinstance(item, ContentDelta):
                    view.add(item.text)
                elif isinstance(item, ChatResult):
                    result = item
    except KeyboardInterrupt:
        trace = stream.headers.get("x-llmeu-trace-id") if stream.headers else None
        where = f" · trace {escape(trace)}" if trace else ""
        err.print(f"[bold yellow]⏹ cancelled[/] [yellow]— the answer above is partial{where}[/]")
        return Outcome.CANCELLED, None
    except StreamError as exc:
        err.print(f"[bold red]✗ the server broke off the answer:[/] {escape(str(exc.error))}")
        err.print("[red]  the answer above is incomplete[/]")
        _print_footer(err, exc.result)
        return Outcome.FAILED, exc.result
    except IncompleteStreamError as exc:
        err.print(f"[bold red]✗ incomplete answer:[/] {escape(str(exc))}")
        err.print("[red]  the answer above is partial[/]")
        return Outcome.FAILED, exc.result
    except APIStatusError as exc:
        err.print(f"[bold red]✗ {escape(str(exc))}[/]")
        return Outcome.FAILED, None
    except APIConnectionError as exc:
        err.print(f"[bold red]✗ {escape(settings.base_url)}: {escape(str(exc))}[/]")
        return Outcome.FAILED, None
    assert result is not None
    for call in result.tool_calls:
        out.print(f"[magenta]→ tool call[/] {escape(call.name)}({escape(call.arguments)})")
    _print_footer(err, result)
    return Outcome.COMPLETE, result


class LiveAnswer:
    """The answer being written: finished blocks printed once, the open block live.

    On a terminal the open block is re-rendered as Markdown on every delta,
    with half-written constructs held back; elsewhere the text is written as
    it comes. Leaving the context shows everything received, held or not.
    """

    def __init__(self, console: Console) -> None:
        self._console = console
        self._text = ""
        self._settled = 0
        self._live: Live | None = None
        self._keyboard = _SilentKeyboard()

    def __enter__(self) -> LiveAnswer:
        if self._console.is_terminal:
            self._keyboard.__enter__()
            waiting = Spinner("dots", Text("waiting for the first token…", style="dim"))
            # No refresh thread: a redraw racing a block printed above the live
            # region could erase that block. Each delta redraws once, in order.
            self._live = Live(
                waiting,
                console=self._console,
                auto_refresh=False,
                vertical_overflow="visible",
                redirect_stderr=False,
            )
            self._live.start(refresh=True)
        return self

    def add(self, text: str) -> None:
        self._text += text
        if self._live is None:
            self._console.file.write(text)
            self._console.file.flush()
            return
        split = split_markdown(self._text[self._settled :])
        if split.settled:
            self._live.console.print(Markdown(split.settled))
            self._live.console.print()
            self._settled += len(split.settled)
        self._live.update(_markdown(split.live), refresh=True)

    def __exit__(self, *exc_info: object) -> None:
        if self._live is None:
            if self._text and not self._text.endswith("\n"):
                self._console.file.write("\n")
            return
        try:
            self._live.update(_markdown(self._text[self._settled :]), refresh=True)
            self._live.stop()
        finally:
            self._keyboard.__exit__()


class _SilentKeyboard:
    """Turns the terminal's echo off while an answer streams.

    Rich pads each line of the live region to the full width, so the cursor
    rests in the last column; an echoed `^C` or a key typed ahead would wrap
    to a new line that rich does not know about, and the next redraw would
    leave a stale copy of the answer behind. Keys typed ahead are still read
    by the next prompt; only their echo waits. A no-op when standard input is
    not a terminal or the platform has no termios.
    """

    def __init__(self) -> None:
        self._saved: list[Any] | None = None

    def __enter__(self) -> None:
        if termios is None or not sys.stdin.isatty():
            return
        fd = sys.stdin.fileno()
        self._saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, quiet)

    def __exit__(self, *exc_info: object) -> None:
        if termios is not None and self._saved is not None:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, self._saved)
            self._saved = None


def _markdown(text: str) -> RenderableType:
    return Markdown(text) if text.strip() else Text("")


def _print_footer(err: Console, result: ChatResult) -> None:
    """Two dim lines: where the call ran and what it cost, then how fast it was."""
    where: list[str] = []
    routing = result.llmeu
    if routing is not None:
        where += [p for p in (routing.provider, routing.inference_region) if p]
        where += [p for p in (routing.sovereignty_class,) if p]
        if routing.policy_id:
            where.append(f"policy {routing.policy_id}")
        cost = routing.cost_estimate
        if cost is not None and cost.amount is not None:
            estimated = " (estimated)" if cost.estimated else ""
            where.append(money(cost.amount, cost.currency or "EUR") + estimated)
    elif result.model:
        where.append(result.model)
    speed: list[str] = []
    timings = result.timings
    if timings is not None:
        if timings.output_tokens is not None:
            approx = "~" if timings.tokens_estimated else ""
            speed.append(f"{approx}{timings.output_tokens} tokens")
        if timings.ttft is not None:
            speed.append(f"TTFT {timings.ttft * 1000:.0f} ms")
        if timings.tpot is not None:
            speed.append(f"TPOT {timings.tpot * 1000:.1f} ms")
    if routing is not None and routing.trace_id:
        speed.append(f"trace {routing.trace_id}")
    for prefix, parts in (("— ", where), ("  ", speed)):
        if parts:
            err.print(Text(prefix + " · ".join(parts), style="dim"))
