"""What a Responses call forwards, for the scan and the masking.

The call reaches an upstream in one of two forms: the `ChatRequest` it maps
onto (`llmeu.protocol.responses_wire.to_chat`), which every kind of endpoint
serves, or, on an endpoint that speaks the Responses API itself, a request
built from that chat request's messages and the caller's own settings
(`llmeu.protocol.responses_upstream.native_body`: tools, `text`, `reasoning`,
`metadata`, `safety_identifier`, `prompt_cache_key`…). So the scan reads the
conversation as the chat request has it (instructions, stored turns and
input, at `messages[…]`) and every other field of the Responses request as
the caller sent it (`tools[0].description`, `metadata.…`); the masking
rewrites both, and the chat request's settings are mapped again from the
masked Responses request, so both forms forward the same masked text.
"""

from __future__ import annotations

from msgspec import UNSET
from msgspec.structs import replace

from llmeu.calls.request import ChatRequest
from llmeu.personal import fields
from llmeu.protocol.responses_wire import ResponsesRequest, to_chat

CONVERSATION = frozenset({"input", "instructions"})
"""Read in the chat request's messages, where they are with the stored turns."""
NOT_FORWARDED = frozenset({"model", "llmeu"})


def responses_parts(
    req: ResponsesRequest, chat: ChatRequest
) -> tuple[list[tuple[str, str]], list[str]]:
    """The `(path, text)` parts of what the call forwards, and the parts that are not text."""
    parts, unscanned = fields.texts(chat.messages, "messages")
    settings, opaque = fields.texts(req, skip=CONVERSATION | NOT_FORWARDED)
    return parts + settings, unscanned + opaque


def responses_rewritten(
    req: ResponsesRequest, chat: ChatRequest, edit: fields.Edit
) -> tuple[ResponsesRequest, ChatRequest]:
    """The Responses request and the chat request with every forwarded string replaced by
    `edit(path, text)`."""
    messages = fields.rewritten(chat.messages, edit, "messages")
    sent = fields.rewritten(req, edit, skip=CONVERSATION | NOT_FORWARDED)
    # The settings mapped from the masked request; the conversation as masked above.
    settings = replace(sent, input=UNSET, instructions=UNSET)
    return sent, to_chat(settings, messages, stream=chat.stream is True)
