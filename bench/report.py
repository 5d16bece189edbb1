"""Render compare results: one markdown table with ratios, a CPU summary, and the JSON."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from loadgen import CellResult

BASELINE = "direct"
LITELLM = "litellm"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _ratio(value: float | None, reference: float | None) -> str:
    if not value or not reference or math.isnan(value) or math.isnan(reference):
        return "-"
    return f"{value / reference:.3g}x"


def _added(value: float | None, reference: float | None) -> str:
    if value is None or reference is None or math.isnan(value) or math.isnan(reference):
        return "-"
    return f"{value - reference:+.2f}"


COLUMNS = (
    "load",
    "target",
    "req/s",
    "vs direct",
    "vs LiteLLM",
    "p50 ms",
    "p99 ms",
    "added p50",
    "added p99",
    "TTFC p50",
    "TTFC p99",
    "added TTFC p50",
    "CPU ms/call",
    "LiteLLM CPU / this",
    "gateway core %",
    "client core %",
    "others on gateway core %",
    "errors",
)


def _row(cell: CellResult, base: CellResult | None, litellm: CellResult | None) -> list[str]:
    litellm_cpu = litellm.gateway_cpu_ms_per_call if litellm else None
    cpu = cell.gateway_cpu_ms_per_call
    return [
        f"c={cell.concurrency} {_kind(cell)}",
        cell.target,
        _num(cell.rps, 0),
        _ratio(cell.rps, base.rps if base else None),
        _ratio(cell.rps, litellm.rps if litellm else None),
        _num(cell.p50_ms),
        _num(cell.p99_ms),
        _added(cell.p50_ms, base.p50_ms if base else None),
        _added(cell.p99_ms, base.p99_ms if base else None),
        _num(cell.ttfc_p50_ms),
        _num(cell.ttfc_p99_ms),
        _added(cell.ttfc_p50_ms, base.ttfc_p50_ms if base else None),
        _num(cpu, 3),
        _ratio(litellm_cpu, cpu) if cpu else "-",
        _num(cell.gateway_core_pct, 0),
        _num(cell.client_core_pct, 0),
        _num(cell.other_load_on_gateway_core_pct, 0),
        str(cell.errors),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def cells_table(cells: Sequence[CellResult]) -> str:
    by_key = {(c.target, c.concurrency, c.stream): c for c in cells}
    rows = []
    for cell in sorted(cells, key=lambda c: (c.stream, c.concurrency)):
        key = (cell.concurrency, cell.stream)
        rows.append(_row(cell, by_key.get((BASELINE, *key)), by_key.get((LITELLM, *key))))
    return _table(COLUMNS, rows)


def _kind(cell: CellResult) -> str:
    return "stream" if cell.stream else "non-stream"


def cpu_summary(cells: Sequence[CellResult]) -> dict[str, dict[str, float]]:
    """Median gateway CPU ms per call over the concurrency levels, per target and kind."""
    grouped: dict[str, dict[str, list[float]]] = {}
    for cell in cells:
        if cell.gateway_cpu_ms_per_call is not None:
            per_kind = grouped.setdefault(cell.target, {})
            per_kind.setdefault(_kind(cell), []).append(cell.gateway_cpu_ms_per_call)
    return {
        target: {kind: statistics.median(values) for kind, values in kinds.items()}
        for target, kinds in grouped.items()
    }


def cpu_table(summary: dict[str, dict[str, float]]) -> str:
    header = ["target", "CPU ms/call non-stream", "CPU ms/stream (64 chunks)"]
    header += ["LiteLLM / this (non-stream)", "LiteLLM / this (stream)"]
    header += ["this / nginx (non-stream)", "this / nginx (stream)"]
    litellm = summary.get(LITELLM, {})
    nginx = summary.get("nginx", {})
    rows = []
    for target, kinds in summary.items():
        ns, st = kinds.get("non-stream"), kinds.get("stream")
        rows.append(
            [
                target,
                _num(ns, 3),
                _num(st, 3),
                _ratio(litellm.get("non-stream"), ns),
                _ratio(litellm.get("stream"), st),
                _ratio(ns, nginx.get("non-stream")),
                _ratio(st, nginx.get("stream")),
            ]
        )
    return _table(header, rows)


def responses_ratios(cells: Sequence[CellResult]) -> list[list[str]]:
    """Per llmeu target and concurrency: CPU per streamed call through the Responses API and
    through chat completions (the same deltas from the same upstream), and their ratio."""
    by_key = {(c.target, c.concurrency, c.stream): c for c in cells}
    rows = []
    for cell in sorted(cells, key=lambda c: (c.target, c.concurrency)):
        if not cell.target.endswith("/responses") or not cell.stream:
            continue
        chat = by_key.get((cell.target.removesuffix("/responses"), cell.concurrency, True))
        chat_cpu = chat.gateway_cpu_ms_per_call if chat else None
        rows.append([
            cell.target.removesuffix("/responses"), str(cell.concurrency), _num(chat_cpu, 3),
            _num(cell.gateway_cpu_ms_per_call, 3), _ratio(cell.gateway_cpu_ms_per_call, chat_cpu),
        ])  # fmt: skip
    return rows


def markdown(meta: dict[str, Any], cells: Sequence[CellResult], failures: dict[str, str]) -> str:
    parts = [
        f"# llmeu benchmark — {meta['date']}",
        "",
        f"Machine: {meta['machine']}. {meta['pinning']}. Cells of {meta['duration_s']} s each "
        f"after a warm-up; streams carry {meta['chunks']} content chunks. "
        f"{meta['nginx']}; LiteLLM {meta['litellm']}; llmeu at commit {meta['llmeu_commit']}.",
        "",
        cells_table(cells),
        "",
        "Median gateway CPU per call over all concurrency levels:",
        "",
        cpu_table(cpu_summary(cells)),
    ]
    ratios = responses_ratios(cells)
    if ratios:
        header = [
            "target",
            "c",
            "CPU ms/chat stream",
            "CPU ms/Responses stream",
            "Responses / chat",
        ]
        parts += ["", "The same streams through the Responses API:", "", _table(header, ratios)]
    if failures:
        parts += ["", "Targets that could not be measured:", ""]
        parts += [f"- **{name}**: {reason}" for name, reason in failures.items()]
    return "\n".join(parts) + "\n"


def as_json(
    meta: dict[str, Any], cells: Sequence[CellResult], failures: dict[str, str]
) -> dict[str, Any]:
    return {
        "meta": meta,
        "cells": [asdict(cell) for cell in cells],
        "cpu_ms_per_call_median": cpu_summary(cells),
        "failures": failures,
    }
