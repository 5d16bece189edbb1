"""`llmeu config check` and `llmeu routes` show a policy's personal-data section."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmeu.cli.main import main

CONFIG = """\
endpoints:
  - endpoint_id: local-smollm2
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [smollm2]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
policies:
  - policy_id: pii
    allow_classes: [on_premise, eu_sovereign]
    max_retention: P0D
    personal_data:
      detectors: {iban: block, email: mask, nl_bsn: restrict}
      restrict: {allow_classes: [on_premise]}
      unscanned: block
default_policy: pii
"""
LINE = (
    "personal data: mask email; block iban; restrict nl_bsn; restrict to classes on_premise; "
    "unscanned parts block; detector errors fail closed; scans up to 1000000 characters"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "llmeu.yaml"
    path.write_text(CONFIG)
    return path


def test_config_check_prints_the_section(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"  policy pii: {LINE}" in out.splitlines()


def test_config_check_names_a_wrong_detector(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config.write_text(CONFIG.replace("iban: block", "passport: block"))
    assert main(["config", "check", str(config)]) == 2
    err = capsys.readouterr().err
    assert "personal_data.detectors.passport" in err and "line 16" in err


def test_routes_describes_the_section(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routes", "--config", str(config), "--policy", "pii"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert " ".join(LINE.split()) in out
