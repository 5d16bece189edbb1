"""CPU cost of the personal-data scan per 10 KB of prompt, and of having no `personal_data`.

    .venv/bin/python bench/personal_data.py [--rounds 7] [--number 200] [--against REV]

Prints the median over rounds of the mean CPU time (process time) per 10 KB, in
milliseconds, of screening and masking a prompt with every detector on, for:
prose (an ordinary chat prompt), number-dense text (the false-positive corpus of
tests/personal: dates, prices, order numbers, code), a prompt with real
identifiers to mask, accented prose (French with typographic punctuation: not
ASCII, so folded), the prose as a conversation of 40 messages (the windows
across their boundaries), and the identifiers as a tool call's arguments, once
as plain JSON (no backslash: one look) and once with `@` and `NL` written as
`\\u` escapes (read before the folding). Beside each, the ratio to a baseline measured in the
same run: one `str.count` pass over the same text (the least any scan can do).
The last lines are the lifecycle's hook for a policy without the section, which
returns before reading the prompt, and restoring an answer. The target is
0.3 ms per 10 KB.

`--against REV` also times the screening and masking as they were at git
revision REV (`llmeu/personal` taken from `git archive`, loaded under another
name), interleaved round by round with this tree's on the same texts, and prints
the ratio: a before/after measured under the same load.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from llmeu.api.call.governance import Governance
from llmeu.personal.masking import Masking
from llmeu.personal.rules import Action, Detector, PersonalDataRules
from llmeu.personal.scan import screen

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "personal" / "fixtures" / "ordinary_text.txt"
SIZE = 10_000
PROSE = (
    "Thanks for the summary of yesterday's meeting. Could you draft a short reply to the "
    "supplier that explains why the delivery is late, apologises for the inconvenience and "
    "proposes a new date early next week? Keep it friendly but firm, and mention that we "
    "still expect the quality checks to be done before anything leaves their warehouse. "
)
IDENTIFIERS = (
    "Refund to NL91 ABNA 0417 1643 00 for jan.jansen@example.nl (BSN 111222333, phone "
    "+31 20 794 0000); card 4111 1111 1111 1111 was declined at 203.0.113.7. "
)
ACCENTED = (
    "Merci pour le compte rendu de la réunion d\u2019hier\u00a0! Pourriez-vous rédiger une "
    "réponse courte au fournisseur \u2013 qui explique pourquoi la livraison est en retard, "
    "s\u2019excuse du désagrément et propose une nouvelle date en début de semaine "
    "prochaine\u00a0? Le coût de 1\u202f250\u00a0\u20ac reste à sa charge. "
)
MESSAGES = 40
RULES = PersonalDataRules(actions=tuple((d, Action.MASK) for d in Detector))


def sized(text: str) -> str:
    return (text * (SIZE // len(text) + 1))[:SIZE]


def per_call_ms(fn: Callable[[], object], rounds: int, number: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(number):
            fn()
        samples.append((time.process_time() - start) / number * 1000)
    return statistics.median(samples)


Parts = list[tuple[str, str]]
Screen = Callable[..., Any]


def as_parts(text: str, messages: int = 1) -> Parts:
    """`text` as the contents of `messages` messages of about the same length."""
    size = -(-len(text) // messages)
    return [(f"messages[{i}].content", text[i * size : (i + 1) * size]) for i in range(messages)]


def as_arguments(text: str, escaped: bool = False) -> Parts:
    """`text` as the one string argument of a tool call, its `@` and `NL` escaped or not."""
    encoded = json.dumps({"note": text})
    if escaped:
        encoded = encoded.replace("@", "\\u0040").replace("NL", "\\u004E\\u004C")
    return [("messages[1].tool_calls[0].function.arguments", encoded)]


def scan_and_mask(parts: Parts, scan: Screen = screen) -> Callable[[], object]:
    def run() -> object:
        screening = scan(parts, [], RULES, "bench")
        return [screening.masked(path, text) for path, text in parts]

    return run


def screen_at(rev: str, into: Path) -> Screen:
    """`screen` of `llmeu/personal` at `rev`, as package `personal_at_rev` (its `rules` stays
    this tree's, so both take the same `Detector` values)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, check=True, text=True
        ).stdout

    files = git("ls-tree", "--name-only", rev, "llmeu/personal/").split()
    modules = [Path(f).stem for f in files if Path(f).stem not in ("__init__", "rules")]
    package = into / "personal_at_rev"
    package.mkdir()
    for file in files:
        code = git("show", f"{rev}:{file}")
        for name in modules:
            code = code.replace(f"llmeu.personal.{name}", f"personal_at_rev.{name}")
        code = code.replace("from llmeu.personal import", "from personal_at_rev import")
        (package / Path(file).name).write_text(code)
    sys.path.insert(0, str(into))
    then: Screen = importlib.import_module("personal_at_rev.scan").screen
    return then


def before_after(before: Screen, parts: Parts, rounds: int, number: int) -> tuple[float, float]:
    """Median ms per call of screening and masking at `before` and now, round by round."""
    runs = (scan_and_mask(parts, before), scan_and_mask(parts))
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for run, kept in zip(runs, samples, strict=True):
            start = time.process_time()
            for _ in range(number):
                run()
            kept.append((time.process_time() - start) / number * 1000)
    return statistics.median(samples[0]), statistics.median(samples[1])


def no_section_hook() -> Callable[[], object]:
    """The governance step's screening for a key whose policy has no `personal_data`."""
    policy = SimpleNamespace(personal_data=None)
    governance = Governance(SimpleNamespace(get={"p": policy}.get))  # type: ignore[arg-type]

    def read() -> tuple[list[tuple[str, str]], list[str]]:
        raise AssertionError("a policy without the section must not read the prompt")

    return lambda: governance.screen("p", read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--against", metavar="REV", help="also time screen() at git revision REV")
    args = parser.parse_args()
    texts = {
        "prose": as_parts(sized(PROSE)),
        "number-dense": as_parts(sized(CORPUS.read_text())),
        "identifiers": as_parts(sized(PROSE + IDENTIFIERS)),
        "accented": as_parts(sized(ACCENTED)),
        "conversation": as_parts(sized(PROSE), MESSAGES),
        "arguments": as_arguments(sized(PROSE + IDENTIFIERS)),
        "escaped-args": as_arguments(sized(PROSE + IDENTIFIERS), escaped=True),
    }
    print(f"{'text (10 KB)':<14}{'scan+mask ms':>14}{'baseline ms':>13}{'ratio':>9}{'hits':>6}")
    for name, parts in texts.items():
        found = screen(parts, [], RULES, "bench")
        hits = sum(f.count for f in found.findings)
        cost = per_call_ms(scan_and_mask(parts), args.rounds, args.number)
        text = "".join(t for _, t in parts)
        baseline = per_call_ms(partial(text.count, "@"), args.rounds, args.number)
        print(f"{name:<14}{cost:>14.4f}{baseline:>13.4f}{cost / baseline:>9.0f}{hits:>6}")
    hook = per_call_ms(no_section_hook(), args.rounds, args.number * 50)
    restore = Masking()
    prose = texts["prose"][0][1]
    restore_ms = per_call_ms(lambda: restore.restore(prose), args.rounds, args.number)
    print(f"no personal_data section: {hook * 1000:.3f} µs per call, prompt never read")
    print(f"restoring 10 KB of answer without placeholders: {restore_ms:.4f} ms")
    print("target: 0.3 ms per 10 KB")
    if args.against:
        with tempfile.TemporaryDirectory() as into:
            before = screen_at(args.against, Path(into))
            print(f"screen() and masking at {args.against} and now, interleaved (ms per 10 KB):")
            for name, parts in texts.items():
                then, now = before_after(before, parts, args.rounds, args.number)
                print(f"  {name:<14}{then:>9.4f} ->{now:>8.4f}  ({now / then:.2f}x the cost)")


if __name__ == "__main__":
    main()
