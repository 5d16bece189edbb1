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


def routes(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, dict[str, str]], str]:
    """Exit status, the table's rows by endpoint id, and the whole output."""
    status = main(["routes", *args])
    out, err = capsys.readouterr()
    return status, table_rows(out), out + err


def table_rows(out: str) -> dict[str, dict[str, str]]:
    """Each row as {column: text}, cut at the header's column starts; wrapped cells joined."""
    lines = out.splitlines()
    head = next(
        (i for i, line in enumerate(lines) if "endpoint" in line and "decision" in line), None
    )
    if head is None:
        return {}
    names = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[head])]
    if names[0][1] == "#":  # right-aligned: its cells end where its header ends
        names[0] = (0, "#")
    rows: dict[str, dict[str, str]] = {}
    last: dict[str, str] = {}
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        bounds = [start for start, _ in names[1:]] + [len(line)]
        cells = {
            name: line[start:end].strip() for (start, name), end in zip(names, bounds, strict=True)
        }
        if cells["endpoint"]:
            last = rows[cells["endpoint"]] = cells
        else:
            last.update({k: f"{last[k]} {v}" for k, v in cells.items() if v})
    return rows


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
    assert rows[endpoint_id]["decision"] == expected


def test_without_a_configuration_every_builtin_endpoint_is_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, rows, out = routes(capsys, "--wide")
    assert status == 0
    assert len(rows) == 33
    assert rows["local-minilm-l6-v2"]["models"] == "minilm all-minilm-l6-v2 local-embeddings"
    assert out.splitlines()[0] == (
        "Policy eu-strict: classes eu_sovereign, on_premise; countries any; providers any;"
    )
    assert "2 admitted, 21 excluded by the policy, 10 skipped" in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_model_lists_its_endpoints_in_try_order(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SCW_SECRET_KEY", "OVH_AI_ENDPOINTS_ACCESS_TOKEN", "IONOS_API_TOKEN"):
        monkeypatch.setenv(name, "x")
    status, rows, _ = routes(capsys, "--model", "gpt-oss-120b", "--policy", "eu")
    assert status == 0
    assert [(id_, row["#"], row["decision"]) for id_, row in rows.items()] == [
        ("scaleway-fr-par-gpt-oss-120b", "1", "admitted"),
        ("ovhcloud-gra-gpt-oss-120b", "2", "admitted"),
        ("ionos-de-txl-gpt-oss-120b", "3", "admitted"),
        ("aws-eu-central-1-gpt-oss-120b", "", "skipped: AWS_BEARER_TOKEN_BEDROCK is not set"),
    ]


def test_a_configuration_file_is_the_whole_catalog(
    capsys: pytest.CaptureFixture[str], config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, rows, _ = routes(capsys, "--config", str(config), "--model", "small")
    assert status == 0
    assert set(rows) == {"fr-a", "de-b", "us-c"}
    assert rows["fr-a"]["decision"] == "skipped: LLMEU_TEST_KEY is not set"
    assert rows["de-b"]["#"] == "1"
    assert rows["us-c"]["decision"] == "excluded by allow_classes"
    assert (rows["us-c"]["region"], rows["us-c"]["retention"]) == ("us-east US", "P30D")
    assert rows["us-c"]["EUR/Mtok in/out"] == "0.01 / 0.01"
    monkeypatch.setenv("LLMEU_TEST_KEY", "x")
    _, rows, _ = routes(capsys, "--config", str(config), "--model", "small")
    assert [rows["de-b"]["#"], rows["fr-a"]["#"]] == ["1", "2"]
    _, rows, _ = routes(capsys, "--config", str(config), "--policy", "german", "--wide")
    assert rows["fr-a"]["decision"] == "excluded by allow_countries"
    assert rows["de-b"]["decision"] == "admitted"
    assert rows["de-b"]["models"] == "small"


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
    rows = table_rows(result.stdout)
    assert {id_: row["decision"] for id_, row in rows.items()} == {
        "fr-a": "admitted",
        "de-b": "admitted",
        "us-c": "excluded by allow_classes",
    }
    assert all(line == line.rstrip() for line in result.stdout.splitlines())
    assert "\x1b[" not in result.stdout, "no colour codes when piped"


def test_the_default_answer_length_of_each_endpoint_is_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, rows, _ = routes(capsys, "--wide")
    assert status == 0
    assert rows["local-smollm2-135m"]["max tokens"] == "512"
    assert rows["scaleway-fr-par-mistral-small"]["max tokens"] == "-"


def test_the_table_fits_a_terminal_and_wide_shows_every_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The built-in catalog's table was about 330 columns; by default it keeps what a
    routing question needs, and `--wide` brings back the rest."""
    _, rows, out = routes(capsys)
    widest = max(len(line) for line in out.splitlines() if "admitted" in line or "excluded" in line)
    assert widest <= 160, widest
    assert "law" not in next(iter(rows.values()))
    _, rows, _ = routes(capsys, "--wide")
    assert {"law", "upstream", "max tokens", "models"} <= set(next(iter(rows.values())))


TOOL_SERVERS = """\
mcp_servers:
  - server_id: crm
    url: https://crm.example.eu/mcp
    provider: example
    country: FR
    sovereignty_class: eu_sovereign
    retention: P0D
  - server_id: search
    url: https://search.example.com/mcp
    provider: searchco
    country: US
    sovereignty_class: global
    retention: P30D
  - server_id: vault
    url: https://vault.example.eu/mcp
    provider: example
    country: DE
    sovereignty_class: eu_sovereign
    retention: P0D
    api_key_env: LLMEU_TEST_VAULT_TOKEN
"""


def test_tool_servers_are_listed_with_the_policies_that_admit_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLMEU_TEST_VAULT_TOKEN", raising=False)
    path = tmp_path / "llmeu.yaml"
    path.write_text(CONFIG.replace("policies:", TOOL_SERVERS + "policies:"))
    status, _, out = routes(capsys, "--config", str(path))
    assert status == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (
        ["crm"], ["search"], ["vault"])}  # fmt: skip
    assert "admitted" in rows["crm"] and rows["crm"].endswith("eu-strict, eu, open")
    assert "excluded by allow_classes" in rows["search"] and rows["search"].endswith("open")
    assert "skipped: LLMEU_TEST_VAULT_TOKEN not set" in rows["vault"]
    assert rows["vault"].endswith("eu-strict, eu, open, german")  # german: DE only
