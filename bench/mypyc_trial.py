"""Issue 41's trial: the per-call path compiled by mypyc, counted against a plain build.

    python3 bench/mypyc_trial.py                                # build, then count instructions
    python3 bench/mypyc_trial.py --tests tests/server tests/routing
    python3 bench/mypyc_trial.py --baseline /path/to/.venv --no-count

Both builds live apart from the checkout, in `bench/.venvs/` (gitignored), each
with the same locked dependencies (the test lock but llama-cpp-python: the trial
serves with `--no-local`): `mypyc-plain` has this checkout installed editable,
as Python; `mypyc` has `mypyc-src`, a copy of the checkout's tracked files in
which mypyc compiles `MODULES` in place. A compiled module's `.so` sits next to
its `.py` and is the one imported. A module mypyc rejects is reported and left
as Python, and the others are compiled again without it; `KEPT_AS_PYTHON` are
the modules mypyc builds but whose build does not work. Then `instructions.py`
runs from the compiled venv against the plain one (or `--baseline`); its last
line gives the ratios, compiled / plain. `--tests` runs pytest on those paths
from the copy, so that the tests import the compiled modules.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
VENV = BENCH_DIR / ".venvs" / "mypyc"
PLAIN = BENCH_DIR / ".venvs" / "mypyc-plain"
SOURCE = BENCH_DIR / ".venvs" / "mypyc-src"
PYTHON = VENV / "bin" / "python"

# The per-call path, by stage: HTTP server, request decoding, routing decision, the
# call's lifecycle, encoders, the upstream SSE decoder, ledger rows, observers.
MODULES = (
    "llmeu/server/http_protocol.py",
    "llmeu/server/request_cycle.py",
    "llmeu/protocol/json_codec.py",
    "llmeu/protocol/chat_wire.py",
    "llmeu/calls/request.py",
    "llmeu/routing/router.py",
    "llmeu/routing/policy.py",
    "llmeu/routing/predicates.py",
    "llmeu/routing/fallback.py",
    "llmeu/routing/breaker.py",
    "llmeu/api/routes/chat_completions.py",
    "llmeu/api/call/door.py",
    "llmeu/api/call/context.py",
    "llmeu/api/call/lifecycle.py",
    "llmeu/api/call/attempts.py",
    "llmeu/api/call/accounting.py",
    "llmeu/api/call/settlement.py",
    "llmeu/api/call/trace.py",
    "llmeu/protocol/chat_stream.py",
    "llmeu/protocol/sse.py",
    "llmeu/protocol/routing_block.py",
    "llmeu/providers/sse_stream.py",
    "llmeu/providers/decoded_stream.py",
    # Their streams subclass the two above: an interpreted class cannot subclass a compiled one.
    "llmeu/providers/openai.py",
    "llmeu/providers/anthropic.py",
    "llmeu/providers/responses_native.py",
    "llmeu/providers/vertex.py",
    "llmeu/providers/bedrock.py",
    "llmeu/limits/shared_breaker.py",
    "llmeu/ledger/trace_writes.py",
    "llmeu/observability/hooks.py",
    "llmeu/observability/telemetry.py",
)

# mypyc builds these, but a compiled `msgspec.Struct` subclass loses its class keywords
# (`kw_only=True`: import fails) and its field types (decoding fails).
STRUCTS = "defines msgspec Structs, which compiled lose their keywords and field types"
SUBCLASSED = "its stream base is subclassed in modules that define Structs"
UVICORN_BASE = (
    "subclasses uvicorn's interpreted protocol classes: the two compiled, every request "
    "was an 'Invalid HTTP request'"
)
KEPT_AS_PYTHON = {
    "llmeu/server/http_protocol.py": UVICORN_BASE,
    "llmeu/server/request_cycle.py": UVICORN_BASE,
    "llmeu/protocol/chat_wire.py": STRUCTS,
    "llmeu/calls/request.py": STRUCTS,
    "llmeu/protocol/routing_block.py": STRUCTS,
    "llmeu/providers/openai.py": STRUCTS,
    "llmeu/providers/anthropic.py": STRUCTS,
    "llmeu/providers/bedrock.py": STRUCTS,
    "llmeu/providers/sse_stream.py": SUBCLASSED,
    "llmeu/providers/decoded_stream.py": SUBCLASSED,
    "llmeu/providers/responses_native.py": "its stream subclasses `SseStream`, left as Python",
    "llmeu/providers/vertex.py": "its stream subclasses `DecodedStream`, left as Python",
    "llmeu/observability/hooks.py": "`CallObserver` is subclassed by interpreted observers "
    "(and tests): compiled, it would need mypy_extensions at run time",
    "llmeu/api/call/context.py": "a dataclass field annotated `object` fails at import "
    "(KeyError: 'object', in mypyc's dataclass support)",
}

_ERROR = re.compile(r"^(llmeu/[\w/]+\.py):\d+: error: (.*)$", re.MULTILINE)
_LOCKED_OUT = "llama-cpp-python=="


def run(argv: list[str | Path], cwd: Path = ROOT) -> None:
    subprocess.run([str(a) for a in argv], check=True, cwd=cwd)


def make_venv(venv: Path) -> None:
    """The locked dependencies, installed as the Makefile installs them, once."""
    if (venv / "bin" / "python").exists():
        return
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    pip: list[str | Path] = [python, "-m", "pip", "install", "-q", "--require-hashes", "--no-deps"]
    run([*pip, "--no-build-isolation", "-r", ROOT / "requirements" / "build.txt"])
    lock = venv / "requirements.txt"
    lock.write_text(_without(ROOT.joinpath("requirements", "test.txt").read_text()))
    run([*pip, "--no-build-isolation", "-r", lock])


def install_editable(venv: Path, project: Path) -> None:
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps",
         "--no-build-isolation", "-e", project],
        check=True, capture_output=True,
    )  # fmt: skip


def _without(requirements: str) -> str:
    """The lock without llama-cpp-python (its name line and its hash lines)."""
    kept, skipping = [], False
    for line in requirements.splitlines(keepends=True):
        if not line.startswith(" "):
            skipping = line.startswith(_LOCKED_OUT)
        if not skipping:
            kept.append(line)
    return "".join(kept)


def copy_checkout() -> None:
    shutil.rmtree(SOURCE, ignore_errors=True)
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        path = ROOT / name.decode()
        if path.is_file():
            (SOURCE / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, SOURCE / path.relative_to(ROOT))


def compile_modules() -> dict[str, str]:
    """Each module's outcome: "compiled", or why it stays Python."""
    status = {module: KEPT_AS_PYTHON.get(module, "") for module in MODULES}
    while todo := [module for module, reason in status.items() if not reason]:
        started = time.monotonic()
        done = subprocess.run(
            [VENV / "bin" / "mypyc", *todo], cwd=SOURCE, capture_output=True, text=True
        )
        if done.returncode == 0:
            print(f"mypyc: {len(todo)} modules in {time.monotonic() - started:.0f} s")
            return {m: reason or "compiled" for m, reason in status.items()}
        rejected = {path: error for path, error in _ERROR.findall(done.stdout)}
        if not rejected.keys() & set(todo):
            sys.exit(f"mypyc failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        for path, error in rejected.items():
            if path in status:
                status[path] = f"rejected: {error}"
    return status


def install_compiled() -> None:
    install_editable(VENV, SOURCE)
    # mypyc's shared library of the group is a top-level module beside `llmeu/`.
    site = Path(
        subprocess.run(
            [PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    (site / "llmeu_mypyc_trial.pth").write_text(f"{SOURCE}\n")


def check_imported(status: dict[str, str]) -> None:
    compiled = [m for m, outcome in status.items() if outcome == "compiled"]
    names = [m.removesuffix(".py").replace("/", ".") for m in compiled]
    probe = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]: print(importlib.import_module(name).__file__)"
    )
    files = subprocess.run(
        [PYTHON, "-c", probe, *names], cwd="/", check=True, capture_output=True, text=True
    ).stdout.split()
    plain = [name for name, file in zip(names, files, strict=True) if not file.endswith(".so")]
    if plain:
        sys.exit(f"imported as Python although compiled: {', '.join(plain)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help=f"a plain venv (default: {PLAIN})")
    parser.add_argument("--tests", nargs="*", default=[], help="pytest paths, run compiled")
    parser.add_argument("--no-count", action="store_true", help="skip the instruction count")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--streams", type=int, default=100)
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "bin" / "python").exists():
        parser.error(f"no venv at {args.baseline}")
    make_venv(VENV)
    copy_checkout()
    status = compile_modules()
    install_compiled()
    check_imported(status)
    width = max(map(len, status))
    for module, outcome in status.items():
        print(f"{module:{width}}  {outcome}")
    if args.tests:
        run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests], cwd=SOURCE)
    if not args.no_count:
        if args.baseline is None:
            make_venv(PLAIN)
            install_editable(PLAIN, ROOT)
        run([
            PYTHON, BENCH_DIR / "instructions.py", "--baseline", args.baseline or PLAIN,
            "--calls", str(args.calls), "--streams", str(args.streams),
        ])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
