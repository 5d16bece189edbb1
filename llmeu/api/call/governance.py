"""The governance step: what a request may do, decided once for every surface.

Before any upstream is asked, every call takes the same step, in this order
(`Call.govern`):

1. record what was asked on the trace (model, stream, subject, prompt);
2. screen the prompt's text against the key's policy's `personal_data` rules: `block`
   refuses, `restrict` narrows the route, `mask` rewrites what goes upstream (the values
   come back in the answer);
3. admit the call against the key's limits;
4. route it: the effective policy (the key's, narrowed by the request, restricted by a
   personal-data hit) and the plan of endpoints that policy admits.

A surface describes its request once as an `Intent` (`chat_intent` for everything that
maps onto the canonical `ChatRequest`). `/v1/messages/count_tokens`, which is not a call
(no trace, no limits), takes the screening and routing halves through `Governance` too.
Without a `personal_data` section in the policy, screening costs nothing: the prompt is
not even walked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from llmeu.api.call.accounting import estimate_prompt_tokens
from llmeu.api.services.policies import PolicyBook
from llmeu.calls.request import ChatRequest, RoutingRequest, text_of
from llmeu.personal.chat_text import chat_parts, rewritten
from llmeu.personal.rules import RestrictTo
from llmeu.personal.scan import Screening, TextParts, screen
from llmeu.routing.catalog import Capability
from llmeu.routing.policy import Policy, restricted

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
    the endpoint's cap), which the key's limits reserve."""

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


def output_cap(chat: ChatRequest) -> int | None:
    """The request's own limit on the answer's length, if it sets one."""
    for cap in (chat.max_completion_tokens, chat.max_tokens):
        if isinstance(cap, int):
            return cap
    return None


class Governance:
    """The policy decisions of the step, for a key's policy: screening and routing."""

    __slots__ = ("_policies",)

    def __init__(self, policies: PolicyBook):
        self._policies = policies

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
