"""The licence check: read from installed metadata, refused unless the allow-list admits it."""

from __future__ import annotations

from importlib.metadata import distributions
from pathlib import Path

import pytest

from tools import licences, spdx

ALLOWED = frozenset({"Apache-2.0", "MIT", "BSD-3-Clause", "MPL-2.0"})
EXCEPTIONS = frozenset({"LLVM-exception"})


def install_fake(site: Path, name: str, *headers: str) -> None:
    """A distribution as pip leaves it: only its .dist-info/METADATA matters here."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.4", f"Name: {name}", "Version: 1.0", *headers]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("expression", "allowed"),
    [
        ("MIT", True),
        ("mit", True),
        ("GPL-3.0-only", False),
        ("MIT OR GPL-3.0-only", True),
        ("MIT AND GPL-3.0-only", False),
        ("(MIT OR GPL-3.0-only) AND Apache-2.0", True),
        ("MIT AND (GPL-3.0-only OR AGPL-3.0-only)", False),
        ("Apache-2.0 WITH LLVM-exception", True),
        ("Apache-2.0 WITH Some-other-exception", False),
        ("LicenseRef-Proprietary", False),
    ],
)
def test_spdx_expressions(expression: str, allowed: bool) -> None:
    assert spdx.allowed(spdx.parse(expression), ALLOWED, EXCEPTIONS) is allowed


@pytest.mark.parametrize("text", ["", "MIT OR", "(MIT", "MIT)", "AND MIT", "MIT License"])
def test_malformed_expressions_are_refused(text: str) -> None:
    with pytest.raises(spdx.SpdxSyntaxError):
        spdx.parse(text)


@pytest.mark.parametrize(
    ("headers", "expression", "source"),
    [
        (["License-Expression: MIT", "License: GPL"], "MIT", "License-Expression"),
        (
            ["Classifier: License :: OSI Approved :: MIT License",
             "Classifier: License :: OSI Approved :: Apache Software License"],
            "Apache-2.0 AND MIT",
            "classifiers",
        ),
        (["License: Apache License, Version 2.0"], "Apache-2.0", "License"),
        (["License: BSD-3-Clause"], "BSD-3-Clause", "License"),
        (["License: Copyright (c) someone, all rights reserved"], None, "no licence in the metadata"),
        (["License: UNKNOWN"], None, "no licence in the metadata"),
        (
            ["Classifier: License :: OSI Approved :: MIT License",
             "Classifier: License :: Other/Proprietary License", "License: MIT"],
            "MIT",
            "License",
        ),
    ],
    ids=["expression-first", "all-classifiers", "named-licence", "spdx-in-license-field",
         "free-text", "unknown", "unreadable-classifier-falls-back"],
)  # fmt: skip
def test_where_the_licence_is_read(
    tmp_path: Path, headers: list[str], expression: str | None, source: str
) -> None:
    install_fake(tmp_path, "pkg", *headers)
    (finding,) = licences.check(
        distributions(path=[str(tmp_path)]),
        licences.Policy(ALLOWED, EXCEPTIONS, {}),
    )
    assert (finding.expression, finding.source) == (expression, source)


def test_the_check_fails_on_a_disallowed_licence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_fake(tmp_path, "fine", "License-Expression: MIT")
    install_fake(tmp_path, "copyleft", "License-Expression: GPL-3.0-only")

    status = licences.main(["--path", str(tmp_path)])

    out = capsys.readouterr().out
    assert status == 1
    assert "NOT copyleft" in out
    assert "ok  fine" in out
    assert "not allowed: copyleft" in out


def test_the_check_passes_when_every_licence_is_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install_fake(tmp_path, "fine", "License-Expression: MIT")
    install_fake(tmp_path, "dual", "License-Expression: GPL-2.0-only OR Apache-2.0")

    assert licences.main(["--path", str(tmp_path)]) == 0
    assert "2 of 2 distributions allowed" in capsys.readouterr().out


def test_an_unreadable_licence_fails_until_the_allow_list_names_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_fake(site, "mystery", "License: see LICENSE.txt")
    allow_list = tmp_path / "licences.toml"
    allow_list.write_text('allowed = ["MIT"]\n', encoding="utf-8")
    assert licences.main(["--path", str(site), "--allow-list", str(allow_list)]) == 1

    allow_list.write_text(
        'allowed = ["MIT"]\n[overrides.Mystery]\nlicence = "MIT"\nreason = "LICENSE.txt is MIT"\n',
        encoding="utf-8",
    )
    assert licences.main(["--path", str(site), "--allow-list", str(allow_list)]) == 0


def test_the_project_allow_list_refuses_strong_copyleft() -> None:
    policy = licences.load_policy()
    for licence in ("GPL-2.0-only", "GPL-3.0-only", "AGPL-3.0-only", "SSPL-1.0"):
        assert not licences.acceptable(licence, policy)
    assert licences.acceptable("Apache-2.0", policy)


def test_an_accepted_override_allows_that_distribution_alone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_fake(site, "stdlike", "License-Expression: LGPL-2.1-or-later")
    install_fake(site, "other-lgpl", "License-Expression: LGPL-2.1-or-later")
    allow_list = tmp_path / "licences.toml"
    allow_list.write_text(
        'allowed = ["MIT"]\n[overrides.stdlike]\nlicence = "LGPL-2.1-or-later"\n'
        'accept = true\nreason = "used unmodified as a library"\n',
        encoding="utf-8",
    )
    assert licences.main(["--path", str(site), "--allow-list", str(allow_list)]) == 1
    (site / "other-lgpl-1.0.dist-info").rename(tmp_path / "elsewhere")
    assert licences.main(["--path", str(site), "--allow-list", str(allow_list)]) == 0


def test_the_project_accepts_python_stdnum_and_says_why() -> None:
    policy = licences.load_policy()
    assert policy.accepted == frozenset({"python-stdnum"})
    assert not licences.acceptable("LGPL-2.1-or-later", policy)
