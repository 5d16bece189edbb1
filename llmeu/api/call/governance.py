"""The governance step: what a request may do, decided once for every surface.

Before any upstream is asked, every call takes the same step, in this order
(`Call.govern`):

1. record what was asked on the trace (model, stream, subject, prompt);
2. screen the prompt's text against the key's policy's `personal_data` rules: `block`
   refuses, `restrict` narrows the route, `mask` rewrites what goes upstream (the values
   come back in the answer);
3. admit the call against the key's limits (`Governance.admit`);
4. route it: the effective policy (the key's, narrowed by the request, restricted by a
   personal-data hit) and the plan of endpoints that policy admits;
5. decide where its hosted tools may go (`ToolPassage`): each endpoint of the plan gets
   those the effective policy allows (`allow_hosted_tools`) and that it runs (declared
   among its capabilities, on a surface it takes natively); the others are dropped from
   what it gets, and the answer names them (`llmeu.dropped_tools`, `x-llmeu-dropped-tools`,
   the trace). Under `hosted_tools: reject` nothing is dropped: a tool the policy does not
   allow is a 400 naming it, and the plan keeps only the endpoints that run them all (none:
   the same 400).

A surface describes its request once as an `Intent` (`chat_intent` for everything that
maps onto the canonical `ChatRequest`). `/v1/messages/count_tokens`, which is not a call
(no trace, no limits), takes the screening and routing halves through `Governance` too.
Without a `personal_data` section in the policy, screening costs nothing: the prompt is
not even walked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from llmeu.api.call.accounting import Accounting, CallCeiling, estimate_prompt_tokens
from llmeu.api.services.policies import PolicyBook
from llmeu.calls.hosted_tools import HostedTool
from llmeu.calls.request import ChatRequest, RoutingRequest, text_of
from llmeu.errors import InvalidRequest
from llmeu.personal import fields
from llmeu.personal.chat_text import chat_parts, rewritten
from llmeu.personal.rules import RestrictTo
from llmeu.personal.scan import Screening, TextParts, screen
from llmeu.routing.catalog import Capability, Endpoint
from llmeu.routing.policy import HostedToolsMode, LimitsFail, Policy, restricted
from llmeu.routing.router import Exclusion, RoutePlan

P = TypeVar("P")

CHAT = frozenset({Capability.CHAT})
CHAT_TOOLS = frozenset({Capability.CHAT, Capability.TOOLS})
EMBEDDINGS = frozenset({Capability.EMBEDDINGS})

Parts = Callable[[], tuple[TextParts, Sequence[str]]]
"""A prompt's `(path, text)` parts and the paths of the parts that are not text."""


@dataclass(frozen=True, slots=True)
class Intent(Generic[P]):
    """What a request asks, in the terms of the governance step. `prompt` is what goes
    upstream (a `ChatRequest`, embedding inputs); `parts` reads its text for the scan and
    `masked` gives it back with the screening's masks applied; `kept` is what the trace keeps
    of it where the policy stores content; `texts` (the prompt as the client sent it) are kept
    out of error messages; `prompt_tokens` is the gateway's estimate, for limits and when no
    usage is reported; `subject` the end user the call is made for (its content is erased
    with theirs); `max_output_tokens` the most the call may produce (0 for embeddings; None:
    the endpoint's cap), which the key's limits reserve; `hosted` reads the prompt's hosted
    tools (as masked, where they go upstream whole), which only an endpoint that
    `runs_hosted` the surface's may get."""

    model: str
    prompt: P
    parts: Callable[[P], tuple[TextParts, Sequence[str]]]
    masked: Callable[[P, Screening], P]
    kept: Callable[[P], object]
    needs: frozenset[Capability]
    narrowing: RoutingRequest | None
    stream: bool = False
    texts: Iterable[str] = ()
    prompt_tokens: Callable[[P], int] | None = None
    subject: str | None = None
    max_output_tokens: int | None = None
    hosted: Callable[[P], Sequence[HostedTool]] | None = None
    runs_hosted: Callable[[Endpoint], bool] | None = None


def chat_intent(
    chat: ChatRequest,
    *,
    stream: bool,
    subject: str | None,
    model: str | None = None,
    texts: Iterable[str] | None = None,
    prompt_tokens: Callable[[ChatRequest], int] = estimate_prompt_tokens,
) -> Intent[ChatRequest]:
    """The intent of a request that maps onto the canonical `ChatRequest`: every text part
    of it screened and masked, its messages kept, tools asking for the `tools` capability,
    the request's own output limit reserved."""
    return Intent(
        model=model if model is not None else chat.model,
        prompt=chat,
        parts=chat_parts,
        masked=lambda prompt, screening: rewritten(prompt, screening.masked),
        kept=lambda prompt: prompt.messages,
        needs=CHAT_TOOLS if chat.tools else CHAT,
        narrowing=chat.llmeu if isinstance(chat.llmeu, RoutingRequest) else None,
        stream=stream,
        texts=texts if texts is not None else [text_of(m) for m in chat.messages],
        prompt_tokens=prompt_tokens,
        subject=subject,
        max_output_tokens=output_cap(chat),
    )


WithHosted = tuple[ChatRequest, list[HostedTool]]
"""A chat request and the hosted tools that go with it, whole, to an endpoint that runs them."""


def with_hosted(
    asked: Intent[ChatRequest], hosted: list[HostedTool], runs: Callable[[Endpoint], bool]
) -> Intent[WithHosted]:
    """`asked`, with hosted tools that go upstream as the caller sent them (Anthropic's server
    tools): their options are screened and masked with the prompt, at their place in the
    request (`tools[2].user_location.city`), and an endpoint that `runs` them may get them."""

    def parts(sent: WithHosted) -> tuple[TextParts, Sequence[str]]:
        texts, unscanned = asked.parts(sent[0])
        found, opaque = list(texts), list(unscanned)
        for tool in sent[1]:
            more, hidden = fields.texts(tool.options, tool.param)
            found += more
            opaque += hidden
        return found, opaque

    def masked(sent: WithHosted, screening: Screening) -> WithHosted:
        tools = [
            replace(tool, options=fields.rewritten(tool.options, screening.masked, tool.param))
            for tool in sent[1]
        ]
        return asked.masked(sent[0], screening), tools

    estimate = asked.prompt_tokens
    return Intent(
        model=asked.model, prompt=(asked.prompt, hosted), parts=parts, masked=masked,
        kept=lambda sent: asked.kept(sent[0]), needs=asked.needs, narrowing=asked.narrowing,
        stream=asked.stream, texts=asked.texts,
        prompt_tokens=(lambda sent: estimate(sent[0])) if estimate is not None else None,
        subject=asked.subject, max_output_tokens=asked.max_output_tokens,
        hosted=lambda sent: sent[1], runs_hosted=runs,
    )  # fmt: skip


def output_cap(chat: ChatRequest) -> int | None:
    """The request's own limit on the answer's length, if it sets one."""
    for cap in (chat.max_completion_tokens, chat.max_tokens):
        if isinstance(cap, int):
            return cap
    return None


@dataclass(frozen=True, slots=True)
class ToolPassage:
    """Where a call's hosted tools may go: to an endpoint that `runs` its surface's hosted
    tools, those of them the policy allows (`allowed`) and the endpoint declares."""

    hosted: tuple[HostedTool, ...] = ()
    allowed: frozenset[str] = frozenset()
    runs: Callable[[Endpoint], bool] | None = None

    def passed(self, endpoint: Endpoint) -> tuple[HostedTool, ...]:
        """The hosted tools `endpoint` gets."""
        if not self.hosted or self.runs is None or not self.runs(endpoint):
            return ()
        runs, allowed = endpoint.hosted_tools, self.allowed
        return tuple(tool for tool in self.hosted if tool.name in allowed and tool.name in runs)

    def dropped(self, endpoint: Endpoint) -> list[str]:
        """The hosted tools left out of what `endpoint` gets, by type, each once."""
        if not self.hosted:
            return []
        passed = self.passed(endpoint)
        return list(dict.fromkeys(tool.type for tool in self.hosted if tool not in passed))


NO_HOSTED_TOOLS = ToolPassage()


def tool_passage(intent: Intent[P], prompt: P, plan: RoutePlan) -> tuple[RoutePlan, ToolPassage]:
    """Step 5: where the hosted tools of `prompt` (as masked) may go, and the plan that keeps
    to it (under `hosted_tools: reject`, the endpoints that run them all); a refusal names the
    tool."""
    hosted = intent.hosted(prompt) if intent.hosted is not None else ()
    if not hosted:
        return plan, NO_HOSTED_TOOLS
    policy = plan.policy
    passage = ToolPassage(tuple(hosted), policy.allow_hosted_tools, intent.runs_hosted)
    if policy.hosted_tools is HostedToolsMode.DROP:
        return plan, passage
    rejects = f"policy `{policy.policy_id}` drops no tool (hosted_tools: reject)"
    for tool in hosted:
        if tool.name not in policy.allow_hosted_tools:
            allowed = ", ".join(sorted(policy.allow_hosted_tools))
            raise _refused(tool, f"{rejects} and allows only [{allowed}] (allow_hosted_tools)")
    kept = [e for e in plan.candidates if not passage.dropped(e)]
    if not kept:
        running = {t.type for e in plan.candidates for t in passage.passed(e)}
        tool = next((t for t in hosted if t.type not in running), hosted[0])
        others = "" if tool.type not in running else " with the call's other hosted tools"
        raise _refused(tool, f"{rejects}, and no endpoint for `{plan.model}` it admits runs "
                             f"it{others}")  # fmt: skip
    excluded = [
        Exclusion(e.endpoint_id, "hosted_tools", f"does not run {', '.join(passage.dropped(e))}")
        for e in plan.candidates
        if e not in kept
    ]
    return replace(plan, candidates=tuple(kept), excluded=(*plan.excluded, *excluded)), passage


def _refused(tool: HostedTool, why: str) -> InvalidRequest:
    return InvalidRequest(
        f"hosted tool `{tool.type}` is refused: {why}",
        param=tool.param,
        code="hosted_tool_refused",
    )


class Governance:
    """The policy decisions of the step, for a key's policy: screening, admission and
    routing."""

    __slots__ = ("_policies",)

    def __init__(self, policies: PolicyBook):
        self._policies = policies

    async def admit(
        self,
        key_policy_id: str,
        accounting: Accounting,
        prompt_tokens: Callable[[], int],
        ceiling: CallCeiling,
    ) -> None:
        """The key's limits and its team's; a narrowing cannot change what its policy says
        of a limits store that does not answer (`limits_fail`)."""
        policy = self._policies.get(key_policy_id)
        limits_fail = policy.limits_fail if policy is not None else LimitsFail.OPEN
        await accounting.admit(prompt_tokens, ceiling, limits_fail)

    def screen(self, key_policy_id: str, parts: Parts) -> Screening | None:
        """The prompt's text against the key's policy's `personal_data` rules (None, and
        `parts` never read, without any). A refusal is the screening's to raise, once it is
        recorded where it must be."""
        policy = self._policies.get(key_policy_id)
        if policy is None or policy.personal_data is None:
            return None
        texts, unscanned = parts()
        return screen(texts, unscanned, policy.personal_data, policy.policy_id)

    def restriction(self, key_policy_id: str, screening: Screening | None) -> RestrictTo | None:
        """Where a `restrict` hit narrows the route to, if the screening had one."""
        if screening is None or not screening.restrict:
            return None
        policy = self._policies.get(key_policy_id)
        return policy.personal_data.restrict if policy and policy.personal_data else None

    def policy(
        self,
        key_policy_id: str,
        narrowing: RoutingRequest | None,
        header: str | None,
        restrict: RestrictTo | None,
    ) -> Policy:
        """The effective policy: the key's, narrowed by the request's `llmeu` field and
        `x-llmeu-policy` header, restricted by a personal-data hit."""
        policy = self._policies.effective(key_policy_id, narrowing, header)
        return restricted(policy, restrict) if restrict is not None else policy
