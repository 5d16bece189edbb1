"""A real terminal for tests: a command in a tmux pane of fixed size, read as a person sees it.

Each `Terminal` runs its own tmux server on a private socket, so tests never
touch a user's tmux and can run side by side; `close()` kills that server and
with it every process of the pane. The pane stays on screen after the command
exits (`remain-on-exit`), so its last screen and exit status can be read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Self

REPO = Path(__file__).resolve().parents[2]


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


class Terminal:
    """`with Terminal(["llmeu", "chat", ...]) as term:` then `term.wait_for("…")`."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        width: int = 100,
        height: int = 30,
        env: dict[str, str] | None = None,
    ) -> None:
        self._socket = f"llmeu-test-{uuid.uuid4().hex[:12]}"
        self._command = list(command)
        self._size = (width, height)
        self._env = env or {}
        self._status_file = Path(tempfile.mkdtemp(prefix="llmeu-term-")) / "status"

    def __enter__(self) -> Self:
        width, height = self._size
        environment = [f"{k}={v}" for k, v in {**self._base_env(), **self._env}.items()]
        # The status goes to a file: tmux's own `pane_dead_status` is sometimes
        # left empty. The wrapping shell survives Ctrl-C (a trap, not an ignore,
        # so the command still gets the signal) to write it.
        wrapped = f"trap : INT; {' '.join(_quote(a) for a in self._command)}; echo $? > {_quote(str(self._status_file))}"
        # One tmux invocation: the pane is kept when the command exits (so its last
        # screen can be read) from before the command starts.
        self._tmux("-f", os.devnull, "start-server", ";",
                   "set-option", "-g", "remain-on-exit", "on", ";",
                   "new-session", "-d", "-s", "test", "-x", str(width), "-y", str(height),
                   *[f"-e{item}" for item in environment], wrapped)  # fmt: skip
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self._socket, "kill-server"], capture_output=True, check=False
        )

    def screen(self) -> str:
        """What the person at this terminal can see, scrollback included; blanks trimmed.

        The scrollback matters once the command has exited: tmux then scrolls
        the pane to write its "Pane is dead" notice, which is left out.
        """
        text = self._tmux("capture-pane", "-p", "-S", "-", "-t", "test")
        lines = [line.rstrip() for line in text.splitlines()]
        kept = [line for line in lines if not line.startswith("Pane is dead (")]
        return "\n".join(kept).strip("\n")

    def send(self, *keys: str) -> None:
        """tmux key names (`Enter`, `C-c`, `C-d`) or literal text."""
        self._tmux("send-keys", "-t", "test", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "test", "-l", text)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        """Poll the screen until `text` is on it; returns that screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen:\n{screen}")
            time.sleep(0.05)

    def exit_status(self, timeout: float = 30) -> int:
        """Wait for the command to exit and return its status."""
        deadline = time.monotonic() + timeout
        while not self._status_file.exists() or not self._status_file.read_text().strip():
            if time.monotonic() > deadline:
                raise AssertionError(f"the command is still running; the screen:\n{self.screen()}")
            time.sleep(0.05)
        return int(self._status_file.read_text())

    def _base_env(self) -> dict[str, str]:
        # The pane's shell starts from the tmux server's environment; make the
        # test's interpreter and this checkout the ones it runs, whatever that is.
        return {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}

    def _tmux(self, *args: str) -> str:
        # The tmux server inherits this environment. Passed explicitly because
        # GNU readline, once loaded (pytest loads it), exports COLUMNS=80 and
        # LINES=24 behind os.environ's back, and rich would believe them.
        environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        result = subprocess.run(
            ["tmux", "-L", self._socket, *args],
            capture_output=True,
            text=True,
            check=False,
            env=environment,
        )
        if result.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {result.stderr.strip()}")
        return result.stdout


def llmeu_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "llmeu.cli.main", *args]


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"
