"""A call's tokens and cost: admitted against its key's limits (and its team's),
counted, settled.

Token counts are the upstream's own whenever it reports them. When it
reports none (a cancelled or broken stream, an upstream without usage), the
gateway estimates and says so (`estimated: true`): prompt tokens are
⌈characters/4⌉ of the messages' text and tool definitions plus 3 per
message; output tokens are the larger of the number of streamed deltas and
⌈characters/4⌉ of what was produced. A missing count is never reported as
zero.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmeu.api.services.team_quotas import TeamBook
from llmeu.calls.output import AssistantOutput, StreamOutput, Usage
from llmeu.calls.record import TraceRecord
from llmeu.calls.request import ChatRequest, text_of
from llmeu.errors import ApiError
from llmeu.ledger.api_keys import ApiKey
from llmeu.limits import Admission, Limiter, Quota
from llmeu.protocol.json_codec import encoder
from llmeu.routing.catalog import Endpoint, Prices
from llmeu.routing.policy import LimitsFail

UNCAPPED_OUTPUT_TOKENS = 4096
"""What a call that sets no `max_tokens` is reserved for, on an endpoint without its own cap."""


@dataclass(frozen=True, slots=True)
class CallCeiling:
    """The most a call may produce and what a token may cost, before it is routed."""

    output_tokens: int
    prices: tuple[Prices, ...]

    @classmethod
    def of(cls, endpoints: Sequence[Endpoint], max_output: int | None) -> CallCeiling:
        """Over `endpoints` (those serving the model): the request's cap, else the largest
        of theirs (`UNCAPPED_OUTPUT_TOKENS` for one without)."""
        if max_output is None:
            caps = [e.default_max_tokens or UNCAPPED_OUTPUT_TOKENS for e in endpoints]
            max_output = max(caps, default=UNCAPPED_OUTPUT_TOKENS)
        return cls(max_output, tuple(e.prices for e in endpoints))

    def cost(self, prompt_tokens: int) -> float:
        return max((p.cost(prompt_tokens, self.output_tokens) for p in self.prices), default=0.0)


@dataclass(frozen=True, slots=True)
class Counts:
    input_tokens: int
    output_tokens: int
    estimated: bool


class Accounting:
    """One call against its key's quota and its team's: `admit` before any upstream,
    `settle` at the end."""

    __slots__ = ("_admissions", "_key", "_limits", "_teams")

    def __init__(self, limits: Limiter, key: ApiKey, teams: TeamBook | None = None):
        self._limits = limits
        self._key = key
        self._teams = teams
        self._admissions: list[Admission] = []

    async def admit(
        self, prompt_tokens: Callable[[], int], ceiling: CallCeiling, limits_fail: LimitsFail
    ) -> None:
        """The key's limits (requests and tokens per minute, budget), then its team's; 429
        when over one. A quota with a tokens-per-minute limit reserves the prompt's estimate
        and the most the call may produce; one with a budget reserves the most the call may
        cost, on the dearest endpoint that serves the model. A call its team refuses gives
        back what its key's limits held. `limits_fail` (the key's policy's) decides a call
        whose limits cannot be checked right now."""
        key = self._key
        quotas = [Quota(key.key_id, key.rpm_limit, key.tpm_limit, key.budget_eur)]
        team = None if self._teams is None else await self._teams.quota(key, time.time())
        if team is not None:
            quotas.append(team)
        prompt, reserve = 0, 0.0
        if any(q.tpm is not None or q.budget_eur is not None for q in quotas):
            prompt = prompt_tokens()
            if any(q.budget_eur is not None for q in quotas):
                reserve = ceiling.cost(prompt)
        for quota in quotas:
            try:
                admission = await self._limits.admit(
                    quota,
                    prompt,
                    output_tokens=ceiling.output_tokens,
                    reserve_eur=reserve,
                    limits_fail=limits_fail,
                )
            except ApiError:
                for admitted in self._admissions:
                    await self._limits.release(admitted)
                self._admissions = []
                raise
            self._admissions.append(admission)

    def settle(self, record: TraceRecord) -> None:
        """Replace the reservations with what the call used; add its cost to the spends. A
        call answered from the answer cache used no upstream tokens (and costs nothing)."""
        used = (record.input_tokens or 0) + (record.output_tokens or 0)
        if record.cache_hit is not None:
            used = 0
        for admission in self._admissions:
            self._limits.settle(admission, used, record.cost_eur)
        self._admissions = []


def estimate_tokens(text: str) -> int:
    """The gateway's own count when the upstream reported none: ~4 characters a token."""
    return tokens_for_characters(len(text))


def tokens_for_characters(characters: int) -> int:
    return math.ceil(characters / 4)


def estimate_prompt_tokens(chat: ChatRequest) -> int:
    """Prompt text and tool definitions at ~4 characters a token, plus 3 per message."""
    text = "".join(text_of(m) for m in chat.messages)
    tools = encoder.encode(chat.tools).decode() if chat.tools else ""
    return estimate_tokens(text + tools) + 3 * len(chat.messages)


def streamed_counts(usage: Usage | None, output: StreamOutput, prompt: Callable[[], int]) -> Counts:
    """The upstream's counts, else estimates: the prompt's, and for the output the larger of
    the delta count and a quarter of the characters."""
    if usage is not None:
        return Counts(usage.prompt_tokens, usage.completion_tokens, False)
    produced = max(output.deltas, tokens_for_characters(output.characters()))
    return Counts(prompt(), produced, True)


def completed_counts(
    usage: Usage | None, message: AssistantOutput, prompt: Callable[[], int]
) -> Counts:
    if usage is not None:
        return Counts(usage.prompt_tokens, usage.completion_tokens, False)
    produced = (message.content or "") + "".join(
        t.function.name + t.function.arguments for t in message.tool_calls or ()
    )
    return Counts(prompt(), estimate_tokens(produced), True)


def call_usage(record: TraceRecord, reported: Usage | None = None) -> Usage:
    """A counted call's usage as a surface reports it: its counts, and the prompt cache's
    share of the input where the upstream reported one."""
    assert record.input_tokens is not None and record.output_tokens is not None
    usage = Usage(
        record.input_tokens, record.output_tokens, record.input_tokens + record.output_tokens
    )
    if reported is not None:
        usage.cache_creation_input_tokens = reported.cache_creation_input_tokens
        usage.cache_read_input_tokens = reported.cache_read_input_tokens
    return usage
