"""The vulnerability audit never reports a pin it could not check as clean."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from tools import audit
from tools.audit import Audit, Pin

NUMPY_OLD = Pin("numpy", "2.4.6")
NUMPY_NEW = Pin("numpy", "2.5.5")
H11 = Pin("h11", "0.16.0")
NOT_FOUND = "Dependency not found on PyPI and could not be audited"
DISKCACHE_ADVISORIES = [
    {"id": "GHSA-w8v5-vhqr-4h9v", "aliases": ["CVE-2025-69872", "PYSEC-2026-2447"], "fixed_in": []},
    {"id": "PYSEC-2026-2447", "aliases": ["CVE-2025-69872", "GHSA-w8v5-vhqr-4h9v"], "fixed_in": []},
]


def project(
    latest: str, releases: dict[str, list[dict[str, Any]]], vulns: list[Any]
) -> dict[str, Any]:
    return {"info": {"version": latest}, "releases": releases, "vulnerabilities": vulns}


def skipped_by_pip_audit(*pins: Pin) -> Audit:
    result = Audit()
    report = {"dependencies": [{"name": p.name, "skip_reason": f"{NOT_FOUND}: {p}"} for p in pins]}
    audit.read_pip_audit(report, pins, "pypi", result)
    return result


def test_pins_pip_audit_skipped_are_unchecked_not_clean() -> None:
    result = skipped_by_pip_audit(H11)

    assert result.checked_by == {}
    assert NOT_FOUND in result.unchecked[H11]
    (summary,) = [line for line in audit.report(result, [], 1) if line.startswith("audit:")]
    assert "0 of 1 pins checked" in summary
    assert "1 not checked" in summary


def test_a_pin_that_is_the_latest_release_is_checked_against_the_project_json() -> None:
    result = skipped_by_pip_audit(H11)

    audit.read_project_json(H11, project("0.16.0", {"0.16.0": [{}]}, []), result)

    assert result.checked_by == {H11: "PyPI project JSON"}
    assert result.unchecked == {}
    assert result.vulnerabilities == {}


def test_an_older_pin_stays_unchecked_with_the_reason() -> None:
    result = skipped_by_pip_audit(NUMPY_OLD)

    audit.read_project_json(NUMPY_OLD, project("2.5.5", {"2.4.6": [{}], "2.5.5": [{}]}, []), result)

    assert result.checked_by == {}
    assert "latest release (2.5.5) only" in result.unchecked[NUMPY_OLD]
    lines = list(audit.report(result, [], 1))
    assert lines[0].startswith("SKIPPED numpy==2.4.6")


def test_a_vulnerability_fails_and_its_aliases_are_one_advisory() -> None:
    pin = Pin("diskcache", "5.6.3")
    result = skipped_by_pip_audit(pin)

    audit.read_project_json(pin, project("5.6.3", {"5.6.3": [{}]}, DISKCACHE_ADVISORIES), result)

    (advisory,) = result.vulnerabilities[pin]
    assert advisory.ids == {"GHSA-w8v5-vhqr-4h9v", "CVE-2025-69872", "PYSEC-2026-2447"}
    assert audit.open_vulnerabilities(result, []) == {pin: [advisory]}
    assert any(
        line.startswith("VULNERABLE diskcache==5.6.3") for line in audit.report(result, [], 1)
    )


def test_an_accepted_vulnerability_is_reported_with_its_reason_and_does_not_fail() -> None:
    pin = Pin("diskcache", "5.6.3")
    result = skipped_by_pip_audit(pin)
    audit.read_project_json(pin, project("5.6.3", {"5.6.3": [{}]}, DISKCACHE_ADVISORIES), result)
    accepted = [audit.Acceptance("diskcache", "CVE-2025-69872", "never used")]

    assert audit.open_vulnerabilities(result, accepted) == {}
    assert any(
        line.startswith("ACCEPTED diskcache==5.6.3") and line.endswith("never used")
        for line in audit.report(result, accepted, 1)
    )


def test_the_project_accepts_only_what_it_explains() -> None:
    for entry in audit.load_accepted():
        assert len(entry.reason) > 40, entry


def test_pip_audit_findings_count_as_checked() -> None:
    result = Audit()
    report = {
        "dependencies": [
            {"name": "h11", "version": "0.16.0", "vulns": []},
            {"name": "numpy", "version": "2.5.5", "vulns": [
                {"id": "PYSEC-1", "fix_versions": ["2.5.6"], "aliases": []}]},
        ]
    }  # fmt: skip

    audit.read_pip_audit(report, [H11, NUMPY_NEW], "pypi", result)

    assert set(result.checked_by) == {H11, NUMPY_NEW}
    assert str(result.vulnerabilities[NUMPY_NEW][0]) == "PYSEC-1 (fixed in 2.5.6)"


def test_a_yanked_pin_is_named() -> None:
    result = skipped_by_pip_audit(H11)

    audit.read_project_json(
        H11,
        project("0.16.0", {"0.16.0": [{"yanked": True, "yanked_reason": "broken"}]}, []),
        result,
    )

    assert "yanked h11==0.16.0: broken" in list(audit.report(result, [], 1))


@pytest.mark.parametrize(
    ("pins", "batches"),
    [
        ([H11], [[H11]]),
        ([H11, NUMPY_OLD, NUMPY_NEW], [[H11, NUMPY_OLD], [NUMPY_NEW]]),
    ],
    ids=["one-version-each", "two-versions-of-one-project"],
)
def test_pip_audit_gets_no_name_twice_in_one_run(pins: list[Pin], batches: list[list[Pin]]) -> None:
    assert audit.unique_name_batches(pins) == batches


def test_every_locked_release_is_audited() -> None:
    lock = tomllib.loads((audit.ROOT / "uv.lock").read_text(encoding="utf-8"))
    releases = {(p["name"], p["version"]) for p in lock["package"] if p["name"] != "llmeu"}

    assert {(pin.name, pin.version) for pin in audit.locked_pins()} == releases
