"""`llmeu routes`: every endpoint, whether the policy admits it and why, offline."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmeu.cli.main import main
from tests.support.processes import REPO

KEY_VARIABLES = [
    "MISTRAL_API_KEY", "SCW_SECRET_KEY", "OVH_AI_ENDPOINTS_ACCESS_TOKEN", "IONOS_API_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK", "OPENAI_API_KEY", "LLMEU_TEST_KEY",
]  # fmt: skip

CONFIG = """\
endpoints:
  - endpoint_id: fr-a
    provider: alpha
    base_url: http://127.0.0.1:9/v1
    api_key_env: LLMEU_TEST_KEY
    model: small-a
    aliases: [small]
    inference_region: fr-par
    country: FR
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {input: 0.2, output: 0.4}
    priority: 20
  - endpoint_id: de-b
    provider: beta
    base_url: http://127.0.0.1:9/v1
    model: small-b
    aliases: [small]
    inference_region: de-fra
    country: DE
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {input: 0.1, output: 0.3}
    priority: 10
  - endpoint_id: us-c
    provider: gamma
    base_url: http://127.0.0.1:9/v1
    model: small-c
    aliases: [small]
    inference_region: us-east
    country: US
    sovereignty_class: global
    retention: P30D
    price_eur_per_mtok: {input: 0.01, output: 0.01}
    priority: 0
policies:
  - policy_id: german
    allow_classes: [eu_sovereign]
    allow_countries: [DE]
    max_retention: P0D
default_policy: eu-strict
"""


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "llmeu.yaml"
    path.write_text(CONFIG)
    return path


def routes(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, list[str]], str]:
    """Exit status, the table's rows by endpoint id (cells), and the whole output."""
    status = main(["routes", *args])
    out, err = capsys.readouterr()
    rows = {}
    for line in out.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 6 and cells[0] not in ("#", "endpoint"):
            rows[cells[1] if cells[0].isdigit() else cells[0]] = cells
    return status, rows, out + err


def decision(cells: list[str]) -> str:
    return cells[-1]


# (arguments, variables set, endpoint, decision)
BUILTIN = [
    pytest.param([], {}, "local-smollm2-135m", "admitted", id="local-model-admitted"),
    pytest.param([], {}, "scaleway-fr-par-mistral-small", "skipped: SCW_SECRET_KEY is not set",
                 id="key-unset-skipped"),
    pytest.param([], {"SCW_SECRET_KEY": "x"}, "scaleway-fr-par-mistral-small", "admitted",
                 id="key-set-admitted"),
    pytest.param([], {}, "mistral-eu-mistral-small", "excluded by max_retention",
                 id="eu-strict-30-day-retention"),
    pytest.param([], {"MISTRAL_API_KEY": "x"}, "mistral-eu-mistral-small", "excluded by max_retention",
                 id="policy-rule-before-key"),
    pytest.param([], {}, "aws-eu-central-1-gpt-oss-120b", "excluded by allow_classes",
                 id="eu-strict-excludes-eu-resident"),
    pytest.param(["--policy", "eu"], {"AWS_BEARER_TOKEN_BEDROCK": "x"}, "aws-eu-central-1-gpt-oss-120b",
                 "admitted", id="eu-admits-eu-resident"),
    pytest.param(["--policy", "eu"], {}, "openai-global-gpt-5.4-mini", "excluded by allow_classes",
                 id="eu-excludes-global"),
    pytest.param(["--policy", "open"], {"OPENAI_API_KEY": "x"}, "openai-global-gpt-5.4-mini", "admitted",
                 id="open-admits-global"),
    pytest.param(["--policy", "eu", "--allow-countries", "de"], {"SCW_SECRET_KEY": "x"},
                 "scaleway-fr-par-gpt-oss-120b", "excluded by allow_countries", id="narrowed-by-country"),
    pytest.param(["--allow-providers", "ionos"], {"SCW_SECRET_KEY": "x"}, "scaleway-fr-par-gpt-oss-120b",
                 "excluded by allow_providers", id="narrowed-by-provider"),
    pytest.param(["--allow-classes", "on_premise"], {"SCW_SECRET_KEY": "x"},
                 "scaleway-fr-par-gpt-oss-120b", "excluded by allow_classes", id="narrowed-by-class"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "env", "endpoint_id", "expected"), BUILTIN)
def test_builtin_catalog_decisions(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    endpoint_id: str,
    expected: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    status, rows, _ = routes(capsys, *args)
    assert status == 0
    assert decision(rows[endpoint_id]) == expected


def test_without_a_configuration_every_builtin_endpoint_is_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, rows, out = routes(capsys)
    assert status == 0
    assert len(rows) == 19
    assert out.startswith("Policy eu-strict: classes eu_sovereign, on_premise;")
    assert "2 admitted, 7 excluded by the policy, 10 skipped" in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_model_lists_its_endpoints_in_try_order(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SCW_SECRET_KEY", "OVH_AI_ENDPOINTS_ACCESS_TOKEN", "IONOS_API_TOKEN"):
        monkeypatch.setenv(name, "x")
    status, rows, _ = routes(capsys, "--model", "gpt-oss-120b", "--policy", "eu")
    assert status == 0
    numbered = sorted((cells[0], cells[1], decision(cells)) for cells in rows.values())
    assert numbered == [
        ("1", "scaleway-fr-par-gpt-oss-120b", "admitted"),
        ("2", "ovhcloud-gra-gpt-oss-120b", "admitted"),
        ("3", "ionos-de-txl-gpt-oss-120b", "admitted"),
        (
            "aws-eu-central-1-gpt-oss-120b",
            "eu_resident",
            "skipped: AWS_BEARER_TOKEN_BEDROCK is not set",
        ),
    ]


def test_a_configuration_file_is_the_whole_catalog(
    capsys: pytest.CaptureFixture[str], config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, rows, _ = routes(capsys, "--config", str(config), "--model", "small")
    assert status == 0
    assert set(rows) == {"fr-a", "de-b", "us-c"}
    assert decision(rows["fr-a"]) == "skipped: LLMEU_TEST_KEY is not set"
    assert rows["de-b"][:2] == ["1", "de-b"]
    assert decision(rows["us-c"]) == "excluded by allow_classes"
    monkeypatch.setenv("LLMEU_TEST_KEY", "x")
    _, rows, _ = routes(capsys, "--config", str(config), "--model", "small")
    assert [rows["de-b"][0], rows["fr-a"][0]] == ["1", "2"]
    _, rows, _ = routes(capsys, "--config", str(config), "--policy", "german")
    assert decision(rows["fr-a"]) == "excluded by allow_countries"
    assert decision(rows["de-b"]) == "admitted"


# (arguments, exit status, part of the message)
REFUSED = [
    pytest.param(["--policy", "lax"], 2, "unknown policy `lax` (policies: eu-strict, eu, open, german)",
                 id="unknown-policy"),
    pytest.param(["--model", "large"], 2, "no endpoint serves `large`", id="unknown-model"),
    pytest.param(["--allow-classes", "global"], 2,
                 "`--allow-classes` would widen policy `eu-strict` with global", id="widening-class"),
    pytest.param(["--policy", "german", "--allow-countries", "DE,FR"], 2,
                 "`--allow-countries` would widen policy `german` with FR", id="widening-country"),
    pytest.param(["--allow-classes", "sovereign"], 2, "unknown sovereignty class", id="unknown-class"),
    pytest.param(["--model", "small", "--policy", "german", "--allow-providers", "alpha"], 1,
                 "No compliant route for `small` under policy `german`.", id="no-compliant-route"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "status", "message"), REFUSED)
def test_refusals(
    capsys: pytest.CaptureFixture[str], config: Path, args: list[str], status: int, message: str
) -> None:
    got, _, out = routes(capsys, "--config", str(config), *args)
    assert got == status
    assert message in out


def test_an_invalid_configuration_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.replace("retention: P30D", "retention: 30d"))
    status, _, out = routes(capsys, "--config", str(path))
    assert status == 2
    assert "(field `retention`, line 33)" in out


def test_as_a_command_its_output_is_one_line_per_endpoint(config: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "routes", "--config", str(config)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
        env={"PATH": "/usr/bin:/bin", "LLMEU_TEST_KEY": "set"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = [line for line in lines if re.match(r"(fr-a|de-b|us-c) ", line)]
    assert [re.split(r"\s{2,}", row)[-1] for row in rows] == [
        "admitted",
        "admitted",
        "excluded by allow_classes",
    ]
    assert "\x1b[" not in result.stdout, "no colour codes when piped"
