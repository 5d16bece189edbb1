"""Hosted tools: the tools a provider defines and runs, by the names policies use for them.

A hosted tool (OpenAI's `web_search`, `code_interpreter`, `mcp`…, Anthropic's
server tools such as `web_search_20250305`) is not code the caller runs: the
provider runs it, or has its model call it in a shape only that provider
knows, with whatever the call sends it. So it is a data flow of its own, and
a policy names the ones it lets through (`allow_hosted_tools`), an endpoint
the ones it runs (in its `capabilities`), by the tool's *name*: its type
without the version date (`web_search_20250305` and `web_search_preview` are
both `web_search`), with the few spellings of one tool made one
(`computer_use_preview` and Anthropic's `computer_20250124` are
`computer_use`, `mcp_toolset` is `mcp`). Which names each wire has:

    Responses API   web_search, file_search, code_interpreter, image_generation,
                    computer_use, local_shell, shell, apply_patch, mcp, tool_search,
                    programmatic_tool_calling
    Messages API    web_search, web_fetch, code_execution, bash, text_editor, computer_use,
                    memory, mcp, tool_search, advisor, browser_toolset, computer_toolset
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RESPONSES_HOSTED = frozenset({
    "web_search", "file_search", "code_interpreter", "image_generation", "computer_use",
    "local_shell", "shell", "apply_patch", "mcp", "tool_search", "programmatic_tool_calling",
})  # fmt: skip
"""The hosted tools of OpenAI's Responses API, by name."""

MESSAGES_HOSTED = frozenset({
    "web_search", "web_fetch", "code_execution", "bash", "text_editor", "computer_use",
    "memory", "mcp", "tool_search", "advisor", "browser_toolset", "computer_toolset",
})  # fmt: skip
"""Anthropic's server tools and the client tools it defines, by name."""

HOSTED_NAMES = RESPONSES_HOSTED | MESSAGES_HOSTED

_ONE_TOOL = {
    "web_search_preview": "web_search",
    "computer": "computer_use",
    "computer_use_preview": "computer_use",
    "tool_search_tool_regex": "tool_search",
    "tool_search_tool_bm25": "tool_search",
    "mcp_toolset": "mcp",
}
_VERSION = re.compile(r"_(?:\d{8}|\d{4}_\d{2}_\d{2})$")


def hosted_name(kind: str) -> str:
    """The name of a hosted tool of type `kind` (`web_search_preview_2025_03_11`:
    `web_search`)."""
    base = _VERSION.sub("", kind)
    return _ONE_TOOL.get(base, base)


@dataclass(frozen=True, slots=True, eq=False)
class HostedTool:
    """One hosted tool of a request: its name, its type as sent, where it is in the request
    (`tools[3]`), and the rest of it as sent (its options), for an upstream that runs it."""

    name: str
    type: str
    param: str
    options: dict[str, Any]

    @classmethod
    def of(cls, kind: str, param: str, options: dict[str, Any]) -> HostedTool:
        return cls(hosted_name(kind), kind, param, options)

    def as_sent(self) -> dict[str, Any]:
        """The tool as the caller sent it."""
        return {"type": self.type, **self.options}
