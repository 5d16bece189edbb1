from __future__ import annotations

import pytest

import compare
from loadgen import CellResult


def cell(target: str, concurrency: int, stream: bool, rps: float) -> CellResult:
    return CellResult(
        target=target, concurrency=concurrency, stream=stream, calls=100, errors=0, wall_s=1.0,
        rps=rps, p50_ms=1.0, p99_ms=2.0, ttfc_p50_ms=None, ttfc_p99_ms=None,
        gateway_cpu_ms_per_call=0.3, gateway_core_pct=90.0, client_core_pct=10.0,
        other_load_on_gateway_core_pct=0.0, first_error=None,
    )  # fmt: skip


def test_postgres_adds_both_commit_modes_after_llmeu() -> None:
    plan = compare.parse_plan(["--postgres", "--targets", "nginx,llmeu,litellm"])
    assert plan.target_names() == ["nginx", "llmeu", "llmeu-pg", "llmeu-pg-async", "litellm"]


def test_postgres_ratios_are_sqlite_calls_per_second_over_each_postgres_target_at_c1() -> None:
    cells = [
        cell("llmeu", 1, False, 1500.0), cell("llmeu", 1, True, 800.0),
        cell("llmeu-pg", 1, False, 750.0), cell("llmeu-pg", 1, True, 500.0),
        cell("llmeu-pg-async", 1, False, 1000.0),
        cell("llmeu-pg/responses", 1, True, 400.0),  # another surface: not a ledger ratio
        cell("llmeu-pg", 16, False, 3000.0),  # another level
    ]  # fmt: skip
    assert compare.postgres_ratios(cells) == {
        ("llmeu-pg", False): pytest.approx(2.0),
        ("llmeu-pg", True): pytest.approx(1.6),
        ("llmeu-pg-async", False): pytest.approx(1.5),
    }
