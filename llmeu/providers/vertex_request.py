"""Gemini's `generateContent` request for a canonical chat request, and its answer's pieces.

Pure: `providers/vertex.py` sends it. Gemini has two roles (`user`,
`model`) that alternate, a separate `systemInstruction`, `functionCall` parts
whose arguments are objects, and `functionResponse` parts that name the
function (looked up from the earlier call's id). Thought parts
(`thought: true`) are reasoning. A safety stop is `content_filter`.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from msgspec import UNSET, Struct

from llmeu.calls.output import Usage
from llmeu.calls.request import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    TextPart,
    ToolMessage,
    UserMessage,
    text_of,
)
from llmeu.calls.tools import ToolChoiceFunction
from llmeu.errors import UpstreamRejected
from llmeu.protocol.json_codec import encoder
from llmeu.providers import chat_mapping as mapping

SAFETY_STOPS = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def finish_reason(reason: str, called_tools: bool) -> str:
    if reason in SAFETY_STOPS:
        return "content_filter"
    if reason == "MAX_TOKENS":
        return "length"
    return "tool_calls" if called_tools else "stop"


def gemini_body(request: ChatRequest) -> bytes:
    mapping.refuse_unsupported(request, "vertex")
    body: dict[str, Any] = {"contents": _contents(request)}
    system = mapping.system_text(request)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    config = _generation_config(request)
    if config:
        body["generationConfig"] = config
    if request.tools:
        declarations = []
        for tool in request.tools:
            declaration: dict[str, Any] = {"name": tool.function.name}
            if isinstance(tool.function.description, str):
                declaration["description"] = tool.function.description
            if isinstance(tool.function.parameters, dict):
                declaration["parameters"] = tool.function.parameters
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
        body["toolConfig"] = {"functionCallingConfig": _calling_config(request)}
    return encoder.encode(body)


def _calling_config(request: ChatRequest) -> dict[str, Any]:
    choice = request.tool_choice
    if isinstance(choice, ToolChoiceFunction):
        return {"mode": "ANY", "allowedFunctionNames": [choice.function.name]}
    return {"mode": {"required": "ANY", "none": "NONE"}.get(str(choice), "AUTO")}


def _generation_config(request: ChatRequest) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name, field in (("temperature", "temperature"), ("topP", "top_p"), ("topK", "top_k"),
                        ("seed", "seed"), ("presencePenalty", "presence_penalty"),
                        ("frequencyPenalty", "frequency_penalty")):  # fmt: skip
        value = getattr(request, field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            config[name] = value
    if (limit := mapping.max_tokens(request)) is not None:
        config["maxOutputTokens"] = limit
    if (stop := mapping.stop_sequences(request)) is not None:
        config["stopSequences"] = stop
    response_format = request.response_format
    if response_format not in (UNSET, None):
        if response_format.type == "json_schema":
            raise UpstreamRejected("vertex endpoints take `json_object`, not `json_schema`",
                                   param="response_format")  # fmt: skip
        if response_format.type == "json_object":
            config["responseMimeType"] = "application/json"
    thinking = request.thinking
    if thinking not in (UNSET, None):
        if thinking.type == "enabled":
            budget = thinking.budget_tokens if isinstance(thinking.budget_tokens, int) else -1
            config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
        else:
            config["thinkingConfig"] = {"thinkingBudget": 0}
    return config


def _contents(request: ChatRequest) -> list[dict[str, Any]]:
    names = mapping.tool_names(request)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(request.messages):
        where = f"messages[{index}]"
        if isinstance(message, UserMessage):
            role, parts = "user", _user_parts(message, where)
        elif isinstance(message, AssistantMessage):
            role, parts = "model", _model_parts(message, where)
        elif isinstance(message, ToolMessage):
            name = names.get(message.tool_call_id)
            if name is None:
                raise UpstreamRejected(f"{where}.tool_call_id names no earlier tool call",
                                       param=f"{where}.tool_call_id")  # fmt: skip
            response = {"name": name, "response": {"content": text_of(message)}}
            role, parts = "user", [{"functionResponse": response}]
        elif message.__struct_config__.tag in ("system", "developer"):
            continue
        else:
            raise UpstreamRejected(f"{where}: vertex endpoints take no `function` messages",
                                   param=where)  # fmt: skip
        if not parts:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    return out


def _user_parts(message: UserMessage, where: str) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(message.content):
        if isinstance(part, TextPart):
            parts.append({"text": part.text})
        elif isinstance(part, ImagePart):
            mime, data = mapping.image_bytes(part, f"{where}.content[{i}]")
            parts.append(
                {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}
            )
        else:
            raise UpstreamRejected(f"{where}.content[{i}]: vertex endpoints take text and images",
                                   param=f"{where}.content[{i}]")  # fmt: skip
    return parts


def _model_parts(message: AssistantMessage, where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": t} for t in mapping.text_parts(message.content)]
    for i, call in enumerate(message.tool_calls or ()):
        args = mapping.arguments_object(
            call.function.arguments, f"{where}.tool_calls[{i}].function.arguments"
        )
        parts.append({"functionCall": {"name": call.function.name, "args": args}})
    return parts


class FunctionCallPart(Struct):
    name: str = ""
    args: Any = None


class Part(Struct):
    text: str | None = None
    thought: bool = False
    functionCall: FunctionCallPart | None = None


class Content(Struct):
    parts: list[Part] = []


class Candidate(Struct):
    content: Content | None = None
    finishReason: str | None = None


class UsageMetadata(Struct):
    promptTokenCount: int | None = None
    candidatesTokenCount: int | None = None
    thoughtsTokenCount: int | None = None
    totalTokenCount: int | None = None

    def usage(self) -> Usage | None:
        """Thoughts are billed as output; Gemini leaves out a count that is zero, so an
        answer's count is derived from the total when only that is given."""
        prompt, total = self.promptTokenCount, self.totalTokenCount
        completion: int | None = None
        if self.candidatesTokenCount is not None:
            completion = self.candidatesTokenCount + (self.thoughtsTokenCount or 0)
        elif prompt is not None and total is not None:
            completion = total - prompt
        return mapping.usage(prompt, completion, total)


class PromptFeedback(Struct):
    blockReason: str | None = None


class ErrorDetail(Struct):
    code: int = 500
    message: str = ""


class GenerateResponse(Struct):
    candidates: list[Candidate] = []
    usageMetadata: UsageMetadata | None = None
    promptFeedback: PromptFeedback | None = None
    error: ErrorDetail | None = None


def new_call_id() -> str:
    """Gemini's function calls carry no id: an OpenAI client needs one to answer them."""
    return f"call_{secrets.token_hex(12)}"
