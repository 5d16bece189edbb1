"""What a Responses or Messages answer says of the hosted MCP tools the gateway called for it.

OpenAI's Responses API lists a server's tools in an `mcp_list_tools` item and
each call in an `mcp_call` item (arguments, output, or error); Anthropic's
Messages API shows each call as an `mcp_tool_use` block followed by its
`mcp_tool_result`. The items come before the model's answer, in the order the
calls were made. Pure: the surfaces' routes build them from what was done.
"""

from __future__ import annotations

from typing import Any


def list_tools_item(item_id: str, label: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "mcp_list_tools",
        "server_label": label,
        "tools": [
            {"name": t["name"], "description": t.get("description"),
             "input_schema": t.get("inputSchema") or {"type": "object"},
             "annotations": t.get("annotations")}
            for t in tools
        ],
    }  # fmt: skip


def call_item(
    item_id: str, label: str, name: str, arguments: str, output: str | None, error: str | None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id, "type": "mcp_call", "server_label": label, "name": name,
        "arguments": arguments, "output": output, "error": None,
        "status": "completed" if error is None else "failed",
    }  # fmt: skip
    if error is not None:
        item["error"] = {"type": "mcp_protocol_error", "code": -32603, "message": error}
    return item


def tool_use_block(block_id: str, server: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "mcp_tool_use", "id": block_id, "name": name, "server_name": server,
            "input": arguments}  # fmt: skip


def tool_result_block(block_id: str, text: str, is_error: bool) -> dict[str, Any]:
    return {"type": "mcp_tool_result", "tool_use_id": block_id, "is_error": is_error,
            "content": [{"type": "text", "text": text}]}  # fmt: skip
