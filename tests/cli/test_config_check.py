"""`llmeu config check FILE`: OK with a summary (exit 0), or the error with field and line (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llmeu.cli.main import main
from tests.support.processes import REPO

VALID = """\
endpoints:
  - endpoint_id: scaleway-fr-par-mistral-small
    provider: scaleway
    kind: openai
    base_url: https://api.scaleway.ai/v1
    api_key_env: LLMEU_TEST_SCW_KEY
    model: mistral-small-3.2-24b-instruct-2506
    model_version: "2506"
    aliases: [mistral-small]
    inference_region: fr-par
    country: FR
    sovereignty_class: eu_sovereign
    retention: P0D
    price_eur_per_mtok: {input: 0.15, output: 0.35}
    priority: 10
    capabilities: [chat]
  - endpoint_id: local-smollm2
    provider: llmeu-local
    kind: local
    model: SmolLM2-135M-Instruct
    aliases: [smollm2, local]
    inference_region: local
    sovereignty_class: on_premise
    retention: P0D
    price_eur_per_mtok: {input: 0, output: 0}
policies:
  - policy_id: fr-only
    allow_classes: [on_premise, eu_sovereign]
    allow_countries: [FR]
    max_retention: P0D
default_policy: fr-only
"""


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMEU_TEST_SCW_KEY", raising=False)


def check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> tuple[int, str, str, Path]:
    path = tmp_path / "llmeu.yaml"
    path.write_text(text)
    status = main(["config", "check", str(path)])
    out, err = capsys.readouterr()
    return status, out, err, path


def test_a_valid_file_is_ok_with_a_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err, path = check(capsys, tmp_path, VALID)
    assert status == 0
    assert err == ""
    assert out.splitlines() == [
        f"OK {path}",
        "  2 endpoints (1 openai, 1 local; 1 eu_sovereign, 1 on_premise)",
        "  3 models: mistral-small, smollm2, local",
        "  4 policies: eu-strict, eu, open, fr-only; default policy: fr-only",
        "  skipped until configured: scaleway-fr-par-mistral-small (LLMEU_TEST_SCW_KEY is not set)",
    ]


def test_tool_servers_are_summarised_and_skipped_without_their_variables(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLMEU_TEST_CRM_TOKEN", raising=False)
    servers = """mcp_servers:
  - server_id: crm
    url: https://crm.example.eu/mcp
    provider: example
    country: FR
    sovereignty_class: eu_sovereign
    retention: P0D
    api_key_env: LLMEU_TEST_CRM_TOKEN
  - server_id: search
    url: https://search.example.com/mcp
    provider: example
    country: US
    sovereignty_class: global
    retention: P30D
"""
    status, out, _, _ = check(capsys, tmp_path, VALID.replace("policies:", servers + "policies:"))
    assert status == 0
    lines = out.splitlines()
    assert "  2 MCP tool servers: crm (eu_sovereign), search (global)" in lines
    assert "  skipped until configured: mcp server crm (LLMEU_TEST_CRM_TOKEN not set)" in lines


def test_a_set_key_is_not_reported_as_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMEU_TEST_SCW_KEY", "secret")
    status, out, _, _ = check(capsys, tmp_path, VALID)
    assert status == 0
    assert "skipped" not in out
    assert "secret" not in out


def test_the_summary_counts_in_the_singular_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one = VALID[: VALID.index("  - endpoint_id: local-smollm2")] + VALID[VALID.index("policies:") :]
    status, out, _, _ = check(capsys, tmp_path, one)
    assert status == 0
    assert "  1 endpoint (1 openai; 1 eu_sovereign)" in out.splitlines()
    assert "  1 model: mistral-small" in out.splitlines()


def edit(old: str, new: str) -> str:
    assert old in VALID
    return VALID.replace(old, new, 1)


# (text, how the error ends: field and line)
INVALID = [
    pytest.param(edit("    priority: 10\n", "    priority: 10\n    weight: 3\n"),
                 "(field `weight`, line 16)", id="unknown-field"),
    pytest.param(edit("retention: P0D", "retention: 30 days"), "(field `retention`, line 13)",
                 id="bad-duration"),
    pytest.param(edit("sovereignty_class: eu_sovereign", "sovereignty_class: sovereign"),
                 "(field `sovereignty_class`, line 12)", id="unknown-class"),
    pytest.param(edit("kind: local", "kind: llama"), "(field `kind`, line 19)", id="unknown-kind"),
    pytest.param(edit("capabilities: [chat]", "capabilities: [chat, audio]"),
                 "(field `capabilities`, line 16)", id="unknown-capability"),
    pytest.param(edit("endpoint_id: local-smollm2", "endpoint_id: scaleway-fr-par-mistral-small"),
                 "(field `endpoint_id`, line 17)", id="duplicate-id"),
    pytest.param(edit("    inference_region: fr-par\n", ""), "(field `inference_region`, line 2)",
                 id="missing-field"),
    pytest.param(edit("default_policy: fr-only", "default_policy: eu-fr"),
                 "(field `default_policy`, line 31)", id="undefined-default"),
    pytest.param(edit("    max_retention: P0D\n", "    max_retention: P0D\n    store_content: P"
                      + "9" * 320 + "Y\n"),
                 "(field `store_content`, line 31)", id="store-content-beyond-a-century"),
    pytest.param(edit("retention: P0D", "retention: P101Y"), "(field `retention`, line 13)",
                 id="retention-beyond-a-century"),
    pytest.param(edit("model: SmolLM2-135M-Instruct", "model: Llama-3-8B"), "(field `model`, line 20)",
                 id="unknown-local-model"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "location"), INVALID)
def test_an_invalid_file_prints_the_error_with_field_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, location: str
) -> None:
    status, out, err, path = check(capsys, tmp_path, text)
    assert status == 2
    assert out == ""
    assert err.startswith(f"{path}: ")
    assert err.rstrip().endswith(location)


def test_a_missing_file_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(["config", "check", str(tmp_path / "absent.yaml")])
    _, err = capsys.readouterr()
    assert status == 2
    assert "cannot read" in err


def test_as_a_command_it_exits_2_without_starting_anything(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(edit("retention: P0D", "retention: forever"))
    result = subprocess.run(
        [sys.executable, "-m", "llmeu.cli.main", "config", "check", str(path)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert "'forever' is not an ISO-8601 duration" in result.stderr
    assert "(field `retention`, line 13)" in result.stderr


ANTHROPIC = """\
  - endpoint_id: anthropic-claude
    provider: anthropic
    kind: anthropic
    base_url: https://api.anthropic.com/v1
    api_key_env: LLMEU_TEST_SCW_KEY
    model: claude-sonnet-4-5
    aliases: [claude]
    inference_region: us
    sovereignty_class: global
    retention: P30D
    price_eur_per_mtok: {input: 3, output: 15}
    capabilities: [chat, responses]
"""


# (kind, the fields it needs besides, warned)
KINDS = [
    pytest.param("anthropic", "", True, id="anthropic"),
    pytest.param("bedrock", "    region: eu-central-1\n", True, id="bedrock"),
    pytest.param("vertex", "    region: europe-west4\n", True, id="vertex"),
    pytest.param("vertex_anthropic", "    region: europe-west4\n", True, id="vertex_anthropic"),
    pytest.param("openai", "", False, id="openai"),
    pytest.param("azure_openai", "", False, id="azure_openai"),
]


@pytest.mark.parametrize(("kind", "fields", "warned"), KINDS)
def test_the_responses_capability_on_a_kind_without_native_responses_is_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, fields: str, warned: bool
) -> None:
    endpoint = ANTHROPIC.replace("    kind: anthropic\n", f"    kind: {kind}\n{fields}")
    status, out, err, _ = check(capsys, tmp_path, edit("policies:\n", endpoint + "policies:\n"))
    assert status == 0, err
    assert err == ""
    warning = (
        "  warning: endpoint `anthropic-claude` declares the `responses` capability, but only "
        "azure_openai and openai endpoints take Responses calls natively: a "
        f"`{kind}` endpoint gets them translated onto chat, as without the capability"
    )
    assert (warning in out.splitlines()) is warned
    assert ("warning" in out) is warned
    kinds = "2 openai, 1 local" if kind == "openai" else f"1 openai, 1 local, 1 {kind}"
    assert out.splitlines()[1].startswith(f"  3 endpoints ({kinds};")
