"""POST /v1/messages/count_tokens: a prompt's input tokens, governed like a call.

With the routed model's own tokenizer where the gateway has it (the local
model), else as an endpoint inside the policy counts them (an `anthropic`
endpoint), else the gateway's estimate, which says `"estimated": true`.

The key's policy's personal-data rules apply as on `/v1/messages`, through
the same governance step: a `block` hit is the same 403
`personal_data_detected`, a `restrict` hit narrows the endpoints that may
count (none left: the usual 403 with reasons), and with `mask` hits the count
is the masked prompt's — placeholders such as `[IBAN_1]` in place of the
values, as an upstream would receive it — so a counting endpoint never sees a
value. Counting is not a call: it leaves no trace and no usage, a refused
count included (nothing reached an upstream, and the refusal tells the client
which detector and where).
"""

from __future__ import annotations

import logging
from typing import Any

from llmeu.api.call.door import Calls
from llmeu.api.call.governance import chat_intent
from llmeu.api.http.asgi import Request
from llmeu.api.routes.messages import api_key, estimate_prompt, parse_messages
from llmeu.calls.request import end_user
from llmeu.errors import UpstreamError
from llmeu.protocol.json_codec import encoder
from llmeu.protocol.messages_codec import to_chat_request

log = logging.getLogger("llmeu.api")


async def handle_count_tokens(calls: Calls, request: Request) -> None:
    key = await calls.context.keys.authenticate(api_key(request))
    wire = parse_messages(await request.body(calls.context.max_body_bytes), count_only=True)
    chat = to_chat_request(wire)
    intent = chat_intent(chat, model=wire.model, stream=False, subject=end_user(chat.user))
    governance = calls.governance
    screening = governance.screen(key.policy_id, lambda: intent.parts(chat))
    shift = 0
    if screening is not None:
        if screening.refusal is not None:
            raise screening.refusal
        parts, _ = intent.parts(chat)
        shift = sum(len(screening.masked(path, text)) - len(text) for path, text in parts)
        if screening.masking is not None:
            chat = intent.masked(chat, screening)
    policy = governance.policy(
        key.policy_id,
        intent.narrowing,
        request.header(b"x-llmeu-policy"),
        governance.restriction(key.policy_id, screening),
    )
    upstreams = calls.context.upstreams
    plan = upstreams.plan(wire.model, intent.needs, policy)
    body: dict[str, Any] = {}
    for endpoint in plan.candidates:
        try:
            counted = await upstreams.count_tokens(endpoint, chat)
        except UpstreamError as error:
            # Its message may quote the prompt: the log says only who failed and how.
            log.info("count_tokens on %s failed (%s)", endpoint.endpoint_id, error.code)
            continue
        if counted is not None:
            body = {"input_tokens": counted, "llmeu": {"endpoint_id": endpoint.endpoint_id}}
            break
    else:
        body = {"input_tokens": estimate_prompt(wire, shift=shift), "estimated": True}
    await request.respond(200, encoder.encode(body))
