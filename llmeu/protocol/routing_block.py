"""The `llmeu` routing block (design §3): where a call ran, under which policy, at what cost.

Every surface carries it: in the final object or event of a stream and in
every non-streamed response body, and (trace id only, when no endpoint was
chosen) in error bodies.
"""

from __future__ import annotations

from msgspec import Struct


class CostEstimate(Struct):
    currency: str
    input_tokens: int | None
    output_tokens: int | None
    amount: float | None
    estimated: bool


class CacheHit(Struct):
    """A call answered from the gateway's answer cache: how (`exact`, `semantic`), the trace
    of the call that produced the answer, and what that call cost."""

    hit: bool
    kind: str
    source_trace_id: str
    saved_eur: float | None


class RoutingBlock(Struct, omit_defaults=True):
    """The `llmeu` block of docs/design.md §3, in every response and in a stream's final frame.

    `dropped_tools`, the hosted tools the call was served without (by type, as sent), is there
    only when there are some. `receipt`, the call's signed receipt (compact JWS), is there only
    in a stream's final frame, when the request set `llmeu: {"receipt": true}`. `cache` is
    there only when the answer came from the answer cache: the rest of the block is then the
    producing call's (where it ran, under which policy), but for the trace id, which is this
    call's own, and the cost, which is none."""

    trace_id: str
    model_used: str
    model_version: str
    provider: str
    endpoint_id: str
    inference_region: str
    sovereignty_class: str
    policy_id: str
    retention: str
    cost_estimate: CostEstimate
    dropped_tools: list[str] | None = None
    receipt: str | None = None
    cache: CacheHit | None = None
