"""Check every installed distribution's licence against the allow-list in licences.toml.

llmeu is Apache-2.0 and ships beside its dependencies (and inside a container image
with them), so each dependency's licence must allow that. The licence is read from
installed metadata: the SPDX `License-Expression` (PEP 639), else the trove
classifiers (all of them must be allowed), else a `License` field that names a
licence. A distribution whose licence cannot be read fails the check until
licences.toml says, with a reason, what it is.

    python -m tools.licences --python build/runtime-venv/bin/python
    python -m tools.licences --path DIR   # the distributions installed in DIR only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageMetadata, distributions
from pathlib import Path

from packaging.utils import canonicalize_name

from tools import spdx

ALLOW_LIST = Path(__file__).resolve().parent / "licences.toml"

# Classifiers that name one licence. "BSD License" does not say which BSD licence: it
# is read as the 3-clause one, the variant with the most conditions.
CLASSIFIERS = {
    "License :: OSI Approved :: MIT License": "MIT",
    "License :: OSI Approved :: MIT No Attribution License (MIT-0)": "MIT-0",
    "License :: OSI Approved :: Apache Software License": "Apache-2.0",
    "License :: OSI Approved :: BSD License": "BSD-3-Clause",
    "License :: OSI Approved :: ISC License (ISCL)": "ISC",
    "License :: OSI Approved :: Python Software Foundation License": "PSF-2.0",
    "License :: OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "License :: OSI Approved :: The Unlicense (Unlicense)": "Unlicense",
    "License :: OSI Approved :: zlib/libpng License": "Zlib",
    "License :: CC0 1.0 Universal (CC0 1.0) Public Domain Dedication": "CC0-1.0",
    "License :: Public Domain": "LicenseRef-Public-Domain",
    "License :: OSI Approved :: GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "License :: OSI Approved :: GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "License :: OSI Approved :: GNU Affero General Public License v3": "AGPL-3.0-only",
    "License :: OSI Approved :: GNU Lesser General Public License v2 (LGPLv2)": "LGPL-2.0-only",
    "License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "License :: OSI Approved :: European Union Public Licence 1.2 (EUPL 1.2)": "EUPL-1.2",
}

# `License` fields written as names rather than SPDX identifiers, lower-cased.
LICENCE_NAMES = {
    "apache 2.0": "Apache-2.0",
    "apache 2": "Apache-2.0",
    "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0",
    "apache software license": "Apache-2.0",
    "mit license": "MIT",
    "bsd": "BSD-3-Clause",
    "bsd license": "BSD-3-Clause",
    "3-clause bsd license": "BSD-3-Clause",
    "bsd 3-clause license": "BSD-3-Clause",
    "new bsd license": "BSD-3-Clause",
}


@dataclass(frozen=True)
class Policy:
    licences: frozenset[str]
    exceptions: frozenset[str]
    overrides: Mapping[str, str]  # canonical distribution name -> SPDX expression
    # Distributions whose licence is outside `licences` but accepted for how llmeu uses
    # them (`accept = true` in their override, with the reason).
    accepted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Finding:
    name: str
    version: str
    expression: str | None  # None when no licence could be read
    source: str
    allowed: bool


def load_policy(path: Path = ALLOW_LIST) -> Policy:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Policy(
        licences=frozenset(data["allowed"]),
        exceptions=frozenset(data.get("exceptions", [])),
        overrides={
            canonicalize_name(name): entry["licence"]
            for name, entry in data.get("overrides", {}).items()
        },
        accepted=frozenset(
            canonicalize_name(name)
            for name, entry in data.get("overrides", {}).items()
            if entry.get("accept") is True
        ),
    )


def declared(metadata: PackageMetadata) -> tuple[str | None, str]:
    """The SPDX expression a distribution's metadata declares, and where it was read."""
    if expression := _first(metadata, "License-Expression"):
        return expression, "License-Expression"
    # Classifiers come from a fixed vocabulary, the License field is free text: only a
    # classifier set that names licences throughout is taken, and taken whole.
    classifiers = [c for c in metadata.get_all("Classifier") or [] if c.startswith("License ::")]
    known = [CLASSIFIERS[c] for c in classifiers if c in CLASSIFIERS]
    if known and len(known) == len(classifiers):
        return " AND ".join(sorted(set(known))), "classifiers"
    field = _first(metadata, "License")
    if field and "\n" not in field and field.upper() != "UNKNOWN":
        named = LICENCE_NAMES.get(field.lower(), field)
        if _parses(named):
            return named, "License"
    return None, "no licence in the metadata"


def check(dists: Iterable[Distribution], policy: Policy) -> list[Finding]:
    findings = []
    for dist in dists:
        name = canonicalize_name(dist.metadata["Name"])
        expression: str | None
        if name in policy.overrides:
            expression, source = policy.overrides[name], "licences.toml"
        else:
            expression, source = declared(dist.metadata)
        allowed = expression is not None and name in policy.accepted
        findings.append(
            Finding(
                name,
                dist.version,
                expression,
                source,
                allowed or acceptable(expression, policy),
            )
        )
    return sorted(set(findings), key=lambda finding: finding.name)


def acceptable(expression: str | None, policy: Policy) -> bool:
    """Whether the expression is readable and every licence it requires is allowed."""
    if expression is None:
        return False
    try:
        parsed = spdx.parse(expression)
    except spdx.SpdxSyntaxError:
        return False
    return spdx.allowed(parsed, policy.licences, policy.exceptions)


def report(findings: Sequence[Finding]) -> str:
    width = max((len(f.name) for f in findings), default=0)
    lines = [
        f"{'ok ' if f.allowed else 'NOT'} {f.name:<{width}}  {f.version:<16} "
        f"{f.expression or '?'}  ({f.source})"
        for f in findings
    ]
    refused = [f for f in findings if not f.allowed]
    lines.append(
        f"licences: {len(findings) - len(refused)} of {len(findings)} distributions allowed"
        + (f"; not allowed: {', '.join(f.name for f in refused)}" if refused else "")
    )
    return "\n".join(lines)


def target_path(python: str) -> list[str]:
    """Where `python` finds distributions (isolated mode: not the working directory)."""
    probe = "import json, sys; print(json.dumps(sys.path))"
    done = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True, check=True)
    path: list[str] = json.loads(done.stdout)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.licences", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--python", help="check the environment of this interpreter")
    where.add_argument("--path", type=Path, help="check the distributions in this folder")
    parser.add_argument("--allow-list", type=Path, default=ALLOW_LIST)
    args = parser.parse_args(argv)
    path = [str(args.path)] if args.path else target_path(args.python or sys.executable)
    findings = check(distributions(path=path), load_policy(args.allow_list))
    print(report(findings))
    return 0 if all(finding.allowed for finding in findings) else 1


def _first(metadata: PackageMetadata, field: str) -> str | None:
    values = metadata.get_all(field) or []
    return str(values[0]).strip() or None if values else None


def _parses(text: str) -> bool:
    try:
        spdx.parse(text)
    except spdx.SpdxSyntaxError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
