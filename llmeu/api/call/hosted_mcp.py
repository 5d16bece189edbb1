"""Hosted MCP tools in a model call: `{"type": "mcp", "server_url": …}` on `/v1/responses`,
`mcp_servers` on `/v1/messages`, served by the gateway itself.

A request names MCP servers by URL, for the model to call their tools while
it answers. llmeu reaches no URL its catalog does not hold: each URL must be
a catalogued tool server (`mcp_servers:`) that the call's policy admits
(the key's, narrowed by the key's own patterns and the `x-llmeu-policy`
header, as on `/mcp`), or the request is refused with a 403 naming the
server before anything is sent anywhere.

Admitted, the gateway runs the tool loop itself: the servers' tools (those
the request allows and the policy's `allow_tools` admits) are offered to the
model as functions named `<label>__<tool>`; when the model calls them the
gateway calls the tools (each call one tool-call trace, `route: /mcp`,
under the same personal-data rules, limits and circuit as on `/mcp`) and
asks the model again with their results, at most `MAX_ROUNDS` times. A tool
that fails gives the model its error, as a hosted tool's failure does. The
model's own call is one trace, whatever the number of rounds, with the
tokens of all of them. A result goes back to the model as the trace keeps
it: where the policy masks, with placeholders, never the values.

Streamed requests with hosted MCP tools are refused (400, `stream`): a
streaming client calls the tools through `/mcp` itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from llmeu.api.call import asks
from llmeu.api.call.accounting import Counts, streamed_counts
from llmeu.api.call.context import CallContext
from llmeu.api.call.lifecycle import Call
from llmeu.api.call.tool_call import ToolCall, tool_policy
from llmeu.api.http.error_responses import OPENAI_ERRORS
from llmeu.calls.hangup import Hangup
from llmeu.calls.output import DeltaAnswer, StreamOutput
from llmeu.calls.request import AssistantMessage, ChatRequest, ToolMessage
from llmeu.calls.tools import AnyToolCall, FunctionDefinition, Tool
from llmeu.calls.tools import ToolCall as RequestedCall
from llmeu.errors import InvalidRequest, PermissionDenied, UpstreamError
from llmeu.protocol.mcp_hosted import call_item, list_tools_item, tool_result_block, tool_use_block
from llmeu.protocol.messages_request import McpServerIn, McpToolConfiguration
from llmeu.routing.catalog import Endpoint
from llmeu.routing.tool_servers import ToolServer

MAX_ROUNDS = 8
_NAME = 64  # the longest function name an OpenAI-compatible request takes


@dataclass(frozen=True, slots=True)
class HostedServer:
    """A server a request names: its label, URL, and the tools it allows (None: all)."""

    label: str
    url: str
    allowed: frozenset[str] | None
    param: str


@dataclass(slots=True)
class HostedCall:
    """One tool call the gateway made for the model."""

    label: str
    tool: str
    arguments: str
    output: str | None = None
    error: str | None = None
    is_error: bool = False
    trace_id: str = ""


@dataclass(slots=True)
class HostedTools:
    """The admitted servers of one call with the tools each offers, those tools by the
    function name the model sees, and the calls the gateway made."""

    listed: list[tuple[HostedServer, list[dict[str, Any]]]] = field(default_factory=list)
    offered: dict[str, tuple[HostedServer, ToolServer, dict[str, Any]]] = field(
        default_factory=dict
    )
    calls: list[HostedCall] = field(default_factory=list)

    def definitions(self) -> list[Tool]:
        return [
            Tool(function=FunctionDefinition(
                name=name, description=_description(server, tool),
                parameters=tool.get("inputSchema") or {"type": "object"},
            ))
            for name, (_, server, tool) in self.offered.items()
        ]  # fmt: skip

    def owns(self, name: str) -> bool:
        return name in self.offered


async def admit(context: CallContext, call: Call, hosted: list[HostedServer]) -> HostedTools:
    """The request's servers, each a catalogued tool server the policy admits, with the tools
    the request and the policy allow; else the 403 that names the first that is not."""
    policy = tool_policy(context.policies, call.key, call.request)
    catalog = context.tool_servers.catalog
    tools = HostedTools()
    for entry in hosted:
        server = catalog.by_url(entry.url)
        if server is None:
            raise PermissionDenied(
                f"MCP server `{entry.label}` ({entry.url}) is not a tool server of the gateway's "
                "catalog: llmeu reaches no server it does not know", param=entry.param,
                code="mcp_server_not_admitted",
            )  # fmt: skip
        excluded = policy.exclusion(server)
        if excluded is not None or server.server_id in context.tool_servers.unavailable:
            why = excluded[1] if excluded is not None else "it cannot be called now"
            raise PermissionDenied(
                f"MCP server `{entry.label}` ({entry.url}) is not admitted by policy "
                f"{policy.policy_id}: {why}", param=entry.param, code="mcp_server_not_admitted",
            )  # fmt: skip
        listed = await context.tool_servers.tools_of(server, policy, Hangup())
        allowed = [t for t in listed if entry.allowed is None or t["name"] in entry.allowed]
        tools.listed.append((entry, allowed))
        for tool in allowed:
            name = _function_name(entry.label, tool["name"], tools.offered)
            tools.offered[name] = (entry, server, tool)
    return tools


def offered(chat: ChatRequest, tools: HostedTools) -> ChatRequest:
    """The request with the hosted tools among its functions."""
    own = list(chat.tools) if isinstance(chat.tools, list) else []
    return msgspec.structs.replace(chat, tools=[*own, *tools.definitions()])


async def answer(
    context: CallContext, call: Call, chat: ChatRequest, tools: HostedTools, prompt_tokens: int
) -> tuple[Endpoint, DeltaAnswer, StreamOutput]:
    """Ask the model, call the tools it asks for, ask again with their results; the last
    answer (one without a call of a hosted tool), counted over every round."""
    counts = Counts(0, 0, False)
    for _ in range(MAX_ROUNDS):
        endpoint, got = await call.complete(asks.gathered_answer(chat))
        output = StreamOutput()
        for delta in got.deltas:
            output.add(delta)
        round_counts = streamed_counts(got.usage, output, lambda: prompt_tokens)
        counts = Counts(counts.input_tokens + round_counts.input_tokens,
                        counts.output_tokens + round_counts.output_tokens,
                        counts.estimated or round_counts.estimated)  # fmt: skip
        requested = [c for c in output.tool_calls() if isinstance(c, RequestedCall)]
        if (
            not requested
            or len(requested) < len(output.tool_calls())
            or not all(tools.owns(c.function.name) for c in requested)
        ):
            call.counted(counts)
            return endpoint, got, output
        chat = await _with_results(context, call, chat, tools, requested)
    raise UpstreamError(
        f"the model kept calling MCP tools after {MAX_ROUNDS} rounds; the call was ended",
        code="too_many_tool_rounds",
    )


async def _with_results(
    context: CallContext,
    call: Call,
    chat: ChatRequest,
    tools: HostedTools,
    requested: list[RequestedCall],
) -> ChatRequest:
    made_calls: list[AnyToolCall] = [*requested]
    messages = [*chat.messages, AssistantMessage(content=None, tool_calls=made_calls)]
    for requested_call in requested:
        made = await _call_tool(context, call, tools, requested_call)
        text = made.output if made.output is not None else f"error: {made.error}"
        messages.append(ToolMessage(content=text, tool_call_id=requested_call.id,
                                    is_error=made.is_error or made.error is not None))  # fmt: skip
    return msgspec.structs.replace(chat, messages=messages)


async def _call_tool(
    context: CallContext, call: Call, tools: HostedTools, requested: RequestedCall
) -> HostedCall:
    hosted, server, tool = tools.offered[requested.function.name]
    name = tool["name"]
    arguments_text = call.restore_json(requested.function.arguments or "{}")
    made = HostedCall(hosted.label, name, arguments_text)
    tools.calls.append(made)
    try:
        arguments = json.loads(arguments_text)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        made.error = "the model's arguments are not a JSON object"
        return made
    tool_call = ToolCall(context, call.request, call.key, name=server.exposed(name), request_id=0,
                         shape=OPENAI_ERRORS, modern=False, answers=False)  # fmt: skip
    async with tool_call:
        made.trace_id = tool_call.trace.trace_id
        governed, tool, sent = await tool_call.govern(arguments, {})
        await tool_call.run(governed, tool, sent, {})
        await tool_call.complete()
    if tool_call.failure is not None:
        made.error = tool_call.failure.message
    else:
        result = tool_call.kept or {}
        made.output = _text(result)
        made.is_error = result.get("isError") is True
    return made


def _text(result: dict[str, Any]) -> str:
    """A tool result as the model reads it: its text content, else its structured content."""
    texts = [b.get("text", "") for b in result.get("content") or () if isinstance(b, dict)
             and b.get("type") == "text"]  # fmt: skip
    if texts:
        return "\n".join(texts)
    return json.dumps(result.get("structuredContent", result.get("content", [])))


def _description(server: ToolServer, tool: dict[str, Any]) -> str:
    said = tool.get("description")
    return said if isinstance(said, str) else f"{tool['name']} of MCP server {server.server_id}"


def _function_name(label: str, tool: str, taken: Iterable[str]) -> str:
    name = f"{label}__{tool}"[:_NAME]
    number = 2
    while name in set(taken):
        suffix = f"_{number}"
        name = f"{label}__{tool}"[: _NAME - len(suffix)] + suffix
        number += 1
    return name


def from_responses(tools: list[Any] | UnsetType | None) -> tuple[list[HostedServer], list[Any]]:
    """A Responses request's `mcp` tools, and its other tools."""
    hosted: list[HostedServer] = []
    rest: list[Any] = []
    for i, raw in enumerate(tools if isinstance(tools, list) else ()):
        if isinstance(raw, dict) and raw.get("type") == "mcp":
            hosted.append(_responses_entry(raw, f"tools[{i}]"))
        else:
            rest.append(raw)
    return hosted, rest


def _responses_entry(raw: dict[str, Any], param: str) -> HostedServer:
    label, url = raw.get("server_label"), raw.get("server_url")
    if not isinstance(label, str) or not label:
        raise InvalidRequest("an mcp tool needs its server_label", param=f"{param}.server_label")
    if not isinstance(url, str) or not url:
        raise InvalidRequest("llmeu serves MCP servers named by server_url (no connectors)",
                             param=f"{param}.server_url")  # fmt: skip
    _no_credentials(raw, ("authorization", "headers"), param)
    if raw.get("require_approval") not in (None, "never"):
        raise InvalidRequest(
            "approvals of hosted MCP calls are not supported: the policy decides "
            "(require_approval: never)",
            param=f"{param}.require_approval",
        )
    allowed = raw.get("allowed_tools")
    if isinstance(allowed, dict):
        allowed = allowed.get("tool_names")
    names = (
        frozenset(n for n in allowed if isinstance(n, str)) if isinstance(allowed, list) else None
    )
    return HostedServer(label, url, names, param)


def from_messages(servers: list[McpServerIn]) -> list[HostedServer]:
    """A Messages request's `mcp_servers` (the connector's `url` servers)."""
    hosted = []
    for i, server in enumerate(servers):
        param = f"mcp_servers[{i}]"
        if server.authorization_token not in (None, UNSET):
            raise _credentials_refused(f"{param}.authorization_token")
        config = server.tool_configuration
        if isinstance(config, McpToolConfiguration) and config.enabled is False:
            continue
        allowed = config.allowed_tools if isinstance(config, McpToolConfiguration) else None
        names = frozenset(allowed) if isinstance(allowed, list) else None
        hosted.append(HostedServer(server.name, server.url, names, param))
    return hosted


def _no_credentials(raw: dict[str, Any], keys: Iterable[str], param: str) -> None:
    for key in keys:
        if raw.get(key):
            raise _credentials_refused(f"{param}.{key}")


def _credentials_refused(param: str) -> InvalidRequest:
    return InvalidRequest(
        "credentials to a tool server come from the gateway's catalog, not the request",
        param=param,
    )


def responses_items(base: str, tools: HostedTools) -> list[dict[str, Any]]:
    """The `mcp_list_tools` and `mcp_call` items that come before the model's answer."""
    items = [list_tools_item(f"mcpl_{base}{i:02d}", hosted.label, listed)
             for i, (hosted, listed) in enumerate(tools.listed)]  # fmt: skip
    items += [call_item(f"mcp_{base}{i:02d}", c.label, c.tool, c.arguments, c.output, c.error)
              for i, c in enumerate(tools.calls)]  # fmt: skip
    return items


def messages_blocks(base: str, tools: HostedTools) -> list[dict[str, Any]]:
    """An `mcp_tool_use` block and its `mcp_tool_result` for every call, in order."""
    blocks: list[dict[str, Any]] = []
    for i, made in enumerate(tools.calls):
        block_id = f"mcptoolu_{base}{i:02d}"
        try:
            arguments = json.loads(made.arguments)
        except ValueError:
            arguments = made.arguments
        text = made.output if made.output is not None else f"error: {made.error}"
        blocks.append(tool_use_block(block_id, made.label, made.tool, arguments))
        blocks.append(tool_result_block(block_id, text, made.is_error or made.error is not None))
    return blocks


def refuse_streams(stream: bool, param: str = "stream") -> None:
    if stream:
        raise InvalidRequest(
            "hosted MCP tools are served on whole answers (stream: false); a streaming "
            "client calls the tools through /mcp itself",
            param=param,
        )
