"""Known vulnerabilities of every pin in uv.lock, or a printed reason why none could be looked up.

pip-audit asks an advisory database about each pinned release. From a network that
cannot reach it, pip-audit skips every pin and still prints "No known vulnerabilities
found" with exit status 0: a silent pass. This wrapper reads pip-audit's JSON instead
and never reports a pin it could not check as clean:

1. pip-audit checks every pin of uv.lock (all platforms, all extras and groups)
   against its service (`--service pypi`, PyPI's per-release JSON; or `osv`).
2. For each pin it skipped, PyPI's project JSON is asked: it lists the advisories of
   the project's latest release only, so a pin that is the latest release is checked
   there, and any other pin is reported as not checked, with the reason.

Exit status 1 when a vulnerability is known and vulnerabilities.toml does not accept
it with a reason; 0 otherwise, with every unchecked pin named; with --strict, 1 as
well when any pin could not be checked.

    python -m tools.audit [--service pypi|osv] [--strict]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
ACCEPTED = Path(__file__).resolve().parent / "vulnerabilities.toml"
PYPI_PROJECT_JSON = "https://pypi.org/pypi/{name}/json"


@dataclass(frozen=True)
class Pin:
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class Advisory:
    ids: frozenset[str]  # its id and every alias
    fixed_in: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"{' / '.join(sorted(self.ids))} (fixed in {', '.join(self.fixed_in) or 'no release'})"
        )


@dataclass
class Audit:
    """What is known about each pin: its advisories, or why it was not checked."""

    checked_by: dict[Pin, str] = field(default_factory=dict)  # pin -> which source
    vulnerabilities: dict[Pin, list[Advisory]] = field(default_factory=dict)
    unchecked: dict[Pin, str] = field(default_factory=dict)  # pin -> reason
    yanked: dict[Pin, str] = field(default_factory=dict)  # pin -> PyPI's reason


def locked_pins(lock_path: Path = ROOT / "uv.lock") -> list[Pin]:
    """Every release uv.lock can install, on any platform; not llmeu itself."""
    lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    return sorted(
        {
            Pin(canonicalize_name(package["name"]), package["version"])
            for package in lock.get("package", [])
            if "registry" in package.get("source", {})
        },
        key=str,
    )


def run_pip_audit(pins: Sequence[Pin], service: str) -> dict[str, Any]:
    """pip-audit's JSON report on these exact pins (no resolution, no installs)."""
    with tempfile.TemporaryDirectory() as scratch:
        requirements = Path(scratch, "pins.txt")
        requirements.write_text("".join(f"{pin}\n" for pin in pins), encoding="utf-8")
        report = Path(scratch, "report.json")
        command = [sys.executable, "-m", "pip_audit", "--disable-pip", "--no-deps"]
        command += ["--requirement", str(requirements), "--vulnerability-service", service]
        command += ["--format", "json", "--output", str(report), "--progress-spinner", "off"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if not report.is_file():
            raise RuntimeError(f"pip-audit failed ({done.returncode}): {done.stderr.strip()}")
        result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return result


def read_pip_audit(report: dict[str, Any], pins: Sequence[Pin], service: str, audit: Audit) -> None:
    by_name: dict[str, list[Pin]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).append(pin)
    for dependency in report.get("dependencies", []):
        name = canonicalize_name(dependency["name"])
        version = dependency.get("version")
        for pin in by_name.get(name, []):
            if version is not None and pin.version != version:
                continue
            if "skip_reason" in dependency:
                audit.unchecked[pin] = f"pip-audit ({service}): {dependency['skip_reason']}"
            else:
                audit.checked_by[pin] = f"pip-audit ({service})"
                if dependency.get("vulns"):
                    audit.vulnerabilities[pin] = advisories(dependency["vulns"])


def read_project_json(pin: Pin, project: dict[str, Any], audit: Audit) -> None:
    """Check a pin pip-audit skipped against its project's JSON (latest release only)."""
    files = project.get("releases", {}).get(pin.version)
    if files is None:
        audit.unchecked[pin] = "PyPI no longer lists this release"
        return
    yanked = [f.get("yanked_reason") or "no reason given" for f in files if f.get("yanked")]
    if yanked:
        audit.yanked[pin] = yanked[0]
    latest = project["info"]["version"]
    if latest != pin.version:
        audit.unchecked[pin] += (
            f"; PyPI's project JSON lists advisories for the latest release ({latest}) only"
        )
        return
    del audit.unchecked[pin]
    audit.checked_by[pin] = "PyPI project JSON"
    if project.get("vulnerabilities"):
        audit.vulnerabilities[pin] = advisories(project["vulnerabilities"])


def fetch_project(name: str) -> dict[str, Any] | str:
    """PyPI's JSON about a project, or why it could not be read."""
    url = PYPI_PROJECT_JSON.format(name=name)
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (https only)
            project: dict[str, Any] = json.load(response)
            return project
    except (urllib.error.URLError, TimeoutError, ValueError) as error:
        return f"PyPI's project JSON could not be read: {error}"


def unique_name_batches(pins: Sequence[Pin]) -> list[list[Pin]]:
    """Pins in batches without a repeated name: pip-audit refuses two versions of one."""
    batches: list[list[Pin]] = []
    seen: dict[str, int] = {}
    for pin in pins:
        index = seen.get(pin.name, 0)
        seen[pin.name] = index + 1
        if index == len(batches):
            batches.append([])
        batches[index].append(pin)
    return batches


def audit_pins(pins: Sequence[Pin], service: str) -> Audit:
    audit = Audit()
    for batch in unique_name_batches(pins):
        read_pip_audit(run_pip_audit(batch, service), batch, service, audit)
    skipped = [pin for pin in pins if pin in audit.unchecked]
    names = sorted({pin.name for pin in skipped})
    with ThreadPoolExecutor(max_workers=8) as pool:
        projects = dict(zip(names, pool.map(fetch_project, names), strict=True))
    for pin in skipped:
        project = projects[pin.name]
        if isinstance(project, str):
            audit.unchecked[pin] += f"; {project}"
        else:
            read_project_json(pin, project, audit)
    return audit


@dataclass(frozen=True)
class Acceptance:
    package: str
    advisory_id: str
    reason: str

    def covers(self, pin: Pin, advisory: Advisory) -> bool:
        return canonicalize_name(self.package) == pin.name and self.advisory_id in advisory.ids


def load_accepted(path: Path = ACCEPTED) -> list[Acceptance]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        Acceptance(entry["package"], entry["id"], " ".join(entry["reason"].split()))
        for entry in data.get("accepted", [])
    ]


def open_vulnerabilities(audit: Audit, accepted: Sequence[Acceptance]) -> dict[Pin, list[Advisory]]:
    """The advisories no entry of vulnerabilities.toml accepts."""
    found = {
        pin: [a for a in found if not any(entry.covers(pin, a) for entry in accepted)]
        for pin, found in audit.vulnerabilities.items()
    }
    return {pin: advisories for pin, advisories in found.items() if advisories}


def report(audit: Audit, accepted: Sequence[Acceptance], total: int) -> Iterable[str]:
    for pin, found in sorted(audit.vulnerabilities.items(), key=lambda item: str(item[0])):
        for advisory in found:
            why = next((e.reason for e in accepted if e.covers(pin, advisory)), None)
            if why is None:
                yield f"VULNERABLE {pin}: {advisory}"
            else:
                yield f"ACCEPTED {pin}: {advisory}: {why}"
    for pin, reason in sorted(audit.yanked.items(), key=lambda item: str(item[0])):
        yield f"yanked {pin}: {reason}"
    for pin, reason in sorted(audit.unchecked.items(), key=lambda item: str(item[0])):
        yield f"SKIPPED {pin}: {reason}"
    sources: dict[str, int] = {}
    for source in audit.checked_by.values():
        sources[source] = sources.get(source, 0) + 1
    by_source = ", ".join(f"{count} by {source}" for source, count in sorted(sources.items()))
    still_open = open_vulnerabilities(audit, accepted)
    yield (
        f"audit: {len(audit.checked_by)} of {total} pins checked ({by_source or 'none'}); "
        f"{len(still_open)} with open vulnerabilities, "
        f"{len(audit.vulnerabilities) - len(still_open)} with accepted ones only; "
        f"{len(audit.unchecked)} not checked (SKIPPED above, with the reason)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.audit", description=__doc__)
    parser.add_argument("--service", choices=("pypi", "osv"), default="pypi")
    parser.add_argument("--strict", action="store_true", help="fail when a pin is not checked")
    args = parser.parse_args(argv)
    pins = locked_pins()
    accepted = load_accepted()
    audit = audit_pins(pins, args.service)
    for line in report(audit, accepted, len(pins)):
        print(line)
    if open_vulnerabilities(audit, accepted) or (args.strict and audit.unchecked):
        return 1
    return 0


def advisories(entries: Iterable[dict[str, Any]]) -> list[Advisory]:
    """pip-audit's or PyPI's entries as advisories, one per issue however many ids it has."""
    merged: list[Advisory] = []
    for entry in entries:
        if entry.get("withdrawn"):
            continue
        ids = frozenset([entry["id"], *(entry.get("aliases") or [])])
        fixed = tuple(entry.get("fix_versions") or entry.get("fixed_in") or [])
        same = [advisory for advisory in merged if advisory.ids & ids]
        for advisory in same:
            merged.remove(advisory)
            ids |= advisory.ids
            fixed = tuple(sorted({*fixed, *advisory.fixed_in}))
        merged.append(Advisory(ids, fixed))
    return merged


if __name__ == "__main__":
    sys.exit(main())
