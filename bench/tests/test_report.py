from __future__ import annotations

import dataclasses
import math

import pytest

import report
from loadgen import CellResult, percentile


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([3.0, 1.0, 2.0], 50, 2.0), ([1.0] * 99 + [100.0], 99, 1.0), ([5.0], 99, 5.0)],
    ids=["median", "p99-of-100", "single"],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == expected


def test_percentile_of_nothing_is_nan() -> None:
    assert math.isnan(percentile([], 50))


def _cell(target: str, rps: float, cpu: float | None) -> CellResult:
    return CellResult(
        target, 16, False, 100, 0, 1.0, rps, 1.0, 2.0, None, None, cpu, 50.0, 90.0, 0.0, None
    )


def test_table_has_ratios_against_direct_and_litellm() -> None:
    cells = [_cell("direct", 1000, None), _cell("litellm", 10, 8.0), _cell("llmeu", 500, 0.4)]
    table = report.cells_table(cells)
    llmeu_row = next(line for line in table.splitlines() if "| llmeu |" in line)
    assert "| 0.5x | 50x |" in llmeu_row
    assert "| 20x |" in llmeu_row  # LiteLLM's CPU per call over llmeu's


def test_cpu_summary_takes_the_median_per_kind() -> None:
    cells = [_cell("llmeu", 1, 0.1), _cell("llmeu", 1, 0.3), _cell("llmeu", 1, 0.2)]
    assert report.cpu_summary(cells) == {"llmeu": {"non-stream": 0.2}}


def test_responses_streams_are_compared_with_chat_streams_of_the_same_target() -> None:
    def stream(target: str, cpu: float) -> CellResult:
        return dataclasses.replace(_cell(target, 100, cpu), stream=True)

    cells = [stream("llmeu", 1.0), stream("llmeu/responses", 1.2), _cell("llmeu", 1, 0.5)]
    assert report.responses_ratios(cells) == [["llmeu", "16", "1.000", "1.200", "1.2x"]]
    assert "Responses / chat" in report.markdown(
        {"date": "d", "machine": "m", "pinning": "p", "duration_s": 1, "chunks": 64,
         "nginx": "n", "litellm": "l", "llmeu_commit": "c"},
        cells,
        {},
    )  # fmt: skip
