"""Pieces every non-OpenAI wire needs from the canonical request, written once.

Native upstreams (Bedrock's Converse, Gemini) want the system prompt apart
from the turns, tool arguments as JSON objects rather than strings, a tool
result tied to the tool's name, images as bytes, and one list of stop
sequences. Whatever the canonical request holds that a wire cannot carry is
the request's error (`UpstreamRejected`, naming the field), never silently
dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from msgspec import UNSET

from llmeu.calls.output import Usage
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    DeveloperMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    text_of,
)
from llmeu.errors import UpstreamRejected

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def system_text(request: ChatRequest) -> str:
    """System and developer messages, joined: the upstream's separate system prompt."""
    return "\n\n".join(
        text_of(m) for m in request.messages if isinstance(m, SystemMessage | DeveloperMessage)
    )


def turns(request: ChatRequest) -> list[Message]:
    return [m for m in request.messages if not isinstance(m, SystemMessage | DeveloperMessage)]


def tool_names(request: ChatRequest) -> dict[str, str]:
    """The function name of every earlier tool call, by call id (a tool result names only
    the id; Gemini wants the name)."""
    names: dict[str, str] = {}
    for message in request.messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            for call in message.tool_calls:
                names[call.id] = call.function.name
    return names


def arguments_object(arguments: str, where: str) -> dict[str, Any]:
    """A tool call's arguments as the JSON object they must be."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        raise UpstreamRejected(f"{where} is not valid JSON", param=where) from None
    if not isinstance(value, dict):
        raise UpstreamRejected(f"{where} must be a JSON object", param=where)
    return value


def image_bytes(part: ImagePart, where: str) -> tuple[str, bytes]:
    """(MIME type, bytes) of an image given as a `data:` URL; these wires take no URLs."""
    url = part.image_url.url
    head, _, data = url.partition(",")
    mime = head.removeprefix("data:").removesuffix(";base64")
    if not url.startswith("data:") or not head.endswith(";base64") or mime not in IMAGE_FORMATS:
        raise UpstreamRejected(
            f"{where}: this endpoint takes images as base64 data: URLs "
            f"({', '.join(IMAGE_FORMATS)})",
            param=where,
        )
    try:
        return mime, base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UpstreamRejected(f"{where}: invalid base64 image data", param=where) from None


def text_parts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, list):
        return [p.text for p in content if isinstance(p, TextPart) and p.text]
    return []


def stop_sequences(request: ChatRequest) -> list[str] | None:
    stop = request.stop
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list):
        return stop
    return None


def max_tokens(request: ChatRequest) -> int | None:
    for value in (request.max_completion_tokens, request.max_tokens):
        if isinstance(value, int):
            return value
    return None


def refuse_unsupported(request: ChatRequest, kind: str) -> None:
    """OpenAI fields the native wires have no counterpart for."""
    for name in ("logit_bias", "logprobs", "top_logprobs"):
        if getattr(request, name) not in (UNSET, None, False):
            raise UpstreamRejected(f"`{name}` is not supported by {kind} endpoints", param=name)
    if isinstance(request.n, int) and request.n > 1:
        raise UpstreamRejected(f"`n` greater than 1 is not supported by {kind} endpoints",
                               param="n")  # fmt: skip


def usage(prompt: int | None, completion: int | None, total: int | None = None) -> Usage | None:
    """Usage when the upstream counted both sides; a missing count is never a zero."""
    if prompt is None or completion is None:
        return None
    return Usage(prompt, completion, total if total is not None else prompt + completion)
