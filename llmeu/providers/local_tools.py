"""Tools on the bundled chat model: the grammar that makes its answer a call, and the prompt.

A small local model cannot be trusted to write a tool call by itself, so its
sampling is constrained by a llama.cpp GBNF grammar built from the tools'
JSON-schema parameters: whatever it picks, the text is
`<tool_call>[{"name": …, "arguments": {…}}, …]</tool_call>` with arguments
that validate against the named tool's schema. `tool_choice`:

- `required`, or the `allowed_tools` mode `required`: the grammar admits only calls;
- a named function: only calls of that one, exactly one;
- `auto` (the default): a plain answer (first character not `<`) or calls;
- `none`: no tools, no grammar.

`parallel_tool_calls: false` holds the list to one call. The grammar is
text (GBNF): it crosses to wherever generation runs and is compiled there.
Schema keywords the converter would silently drop (`minimum`, `format: email`,
…) are refused with a 400 naming `tools[i]`, so that no answer breaks the
schema it was asked for; a schema the converter cannot read is refused the
same way. The prompt lists the tools in a system section (SmolLM2's chat
template has no tools of its own) and shows earlier calls and results in
the same `<tool_call>` form.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llmeu.calls.request import AssistantMessage, ChatRequest, Message, role_of, text_of
from llmeu.calls.tools import (
    FunctionDefinition,
    ToolChoiceAllowed,
    ToolChoiceCustom,
    ToolChoiceFunction,
)
from llmeu.errors import UnsupportedByEndpoint

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
# JSON-schema keywords llama.cpp's converter (`llama_cpp.llama_grammar`) leaves out of the
# grammar: an answer could break them, so a tool that uses one is refused.
UNENFORCED = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "uniqueItems", "contains", "minContains", "maxContains", "minProperties",
    "maxProperties", "patternProperties", "propertyNames", "dependentRequired",
    "dependentSchemas", "dependencies", "not", "if", "then", "else",
    "unevaluatedProperties", "unevaluatedItems",
})  # fmt: skip
ENFORCED_FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3",
                              "uuid4", "uuid5"})  # fmt: skip
# A plain answer starts with anything but `<` (which opens a call) and runs on freely.
_AUTO_ROOT = "root ::= answer | call"
_ANSWER_RULE = "answer ::= [^<] [^\\x00]*"


@dataclass(frozen=True, slots=True)
class GrammarPlan:
    """How a request shapes generation: the grammar (GBNF text), what the prompt's system
    section says of it, and whether the answer may hold calls."""

    grammar: str
    section: str
    calls: bool = True


def plan_tools(request: ChatRequest) -> GrammarPlan | None:
    """The plan for the request's tools; None when it offers none or `tool_choice` is `none`."""
    tools = tuple(tool.function for tool in request.tools or ())
    choice = request.tool_choice
    if not tools or choice == "none":
        return None
    for index, tool in enumerate(tools):
        check_enforceable(_parameters(tool), f"tools[{index}]", f"tool `{tool.name}`")
    offered = tools
    required = choice == "required"
    parallel = request.parallel_tool_calls is not False
    if isinstance(choice, ToolChoiceAllowed):
        required = choice.allowed_tools.mode == "required"
    named = _named(choice)
    if named is not None:
        offered = tuple(tool for tool in tools if tool.name == named)
        if not offered:
            raise UnsupportedByEndpoint(
                f"tool_choice names `{named}`, which is not among the tools", param="tool_choice"
            )
        required, parallel = True, False
    grammar = _grammar(tools, offered, required=required, parallel=parallel)
    return GrammarPlan(grammar, _tools_section(tools, required=required, parallel=parallel))


def _named(choice: object) -> str | None:
    if isinstance(choice, ToolChoiceFunction):
        return choice.function.name
    if isinstance(choice, ToolChoiceCustom):
        return choice.custom.name
    return None


def _parameters(tool: FunctionDefinition) -> dict[str, Any]:
    return tool.parameters if isinstance(tool.parameters, dict) else _EMPTY_PARAMETERS


def check_enforceable(schema: dict[str, Any], param: str, subject: str) -> None:
    """Refuses (400 naming `param`) a schema with a keyword the grammar would not hold."""
    for path, keyword in _keywords(schema, "parameters"):
        value = _at(schema, path)
        if keyword in UNENFORCED or _dropped(keyword, value, _at(schema, path[:-1])):
            shown = f"`format: {value}`" if keyword == "format" else f"`{keyword}`"
            raise UnsupportedByEndpoint(
                f"{subject}: the local model cannot hold its JSON to {shown} "
                f"(at {'.'.join(path[:-1]) or 'parameters'})",
                param=param,
            )
        if keyword == "$ref" and isinstance(value, str) and not value.startswith("#"):
            raise UnsupportedByEndpoint(
                f"{subject}: the local model resolves only local `$ref`s, not {value!r}",
                param=param,
            )


def _dropped(keyword: str, value: Any, schema: Any) -> bool:
    """Whether the converter drops `keyword` where it stands: lengths it holds only on a
    `type: string` without a `pattern`, item counts only with `items`, a few formats."""
    if not isinstance(schema, dict):
        return False
    if keyword == "format":
        return isinstance(value, str) and value not in ENFORCED_FORMATS
    if keyword in ("minLength", "maxLength"):
        return schema.get("type") != "string" or "pattern" in schema
    if keyword in ("minItems", "maxItems"):
        return "items" not in schema
    return False


def _keywords(schema: Any, where: str) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every (path, keyword) of a schema, below `properties` names included."""
    stack: list[tuple[tuple[str, ...], Any, bool]] = [((where,), schema, False)]
    while stack:
        path, node, naming = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if not naming and key not in ("const", "enum", "default", "examples"):
                    yield (*path, key), key
                if not naming and key in ("const", "enum", "default", "examples"):
                    continue
                naming_below = key in ("properties", "$defs", "definitions") and not naming
                stack.append(((*path, key), value, naming_below))
        elif isinstance(node, list):
            stack.extend(((*path, str(i)), item, False) for i, item in enumerate(node))


def _at(schema: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = schema
    for step in path[1:]:
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def _grammar(
    tools: tuple[FunctionDefinition, ...],
    offered: tuple[FunctionDefinition, ...],
    *,
    required: bool,
    parallel: bool,
) -> str:
    from llama_cpp import llama_grammar

    schema_converter: Any = llama_grammar.SchemaConverter  # untyped upstream
    items: list[dict[str, Any]] = []
    definitions: dict[str, Any] = {}
    for tool in offered:
        tag = f"tool{len(items)}"
        definitions.update(_hoisted(_parameters(tool), tag))
        items.append({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": {"$ref": f"#/$defs/{tag}"}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })  # fmt: skip
    calls: dict[str, Any] = {
        "$defs": definitions, "type": "array", "items": {"anyOf": items}, "minItems": 1,
    }  # fmt: skip
    if not parallel:
        calls["maxItems"] = 1
    converter = schema_converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    try:
        converter.visit(converter.resolve_refs(calls, ""), "calls")
    except (AssertionError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise _unreadable(tools, offered, error) from None
    call = f'call ::= "{CALL_OPEN}" space calls space "{CALL_CLOSE}"'
    root = "root ::= call" if required else _AUTO_ROOT
    rules = [root, call, strict_strings(converter.format_grammar())]
    return "\n".join(rules if required else [*rules, _ANSWER_RULE]) + "\n"


def strict_strings(grammar: str) -> str:
    """The converter's strings admit raw control characters, which JSON forbids inside a
    string (`json.loads` refuses them): only their escapes are let through."""
    return grammar.replace('char ::= [^"\\\\] |', 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |')


def _hoisted(parameters: dict[str, Any], tag: str) -> dict[str, Any]:
    """A tool's parameters and their `$defs` as top-level definitions of the combined schema,
    under names of their own (the converter names rules after a reference's last step, so two
    tools' `$defs/place` must not meet), its local `$ref`s pointing there."""
    own = {**parameters}
    nested = {**own.pop("$defs", {}), **own.pop("definitions", {})}
    hoisted = {tag: _rebased(own, tag)}
    for name, schema in nested.items():
        hoisted[f"{tag}-{name}"] = _rebased(schema, tag)
    return hoisted


def _rebased(schema: Any, tag: str) -> Any:
    """`schema` with its local `$ref`s pointing at the hoisted definitions of tool `tag`."""
    if isinstance(schema, dict):
        return {
            key: _ref(value, tag) if key == "$ref" and isinstance(value, str)
            else _rebased(value, tag)
            for key, value in schema.items()
        }  # fmt: skip
    if isinstance(schema, list):
        return [_rebased(item, tag) for item in schema]
    return schema


def _ref(ref: str, tag: str) -> str:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return f"#/$defs/{tag}-{ref.removeprefix(prefix)}"
    return f"#/$defs/{tag}{ref[1:]}" if ref.startswith("#") else ref


def _unreadable(
    tools: tuple[FunctionDefinition, ...], offered: tuple[FunctionDefinition, ...], error: Exception
) -> UnsupportedByEndpoint:
    """The refusal naming the first offered tool whose schema alone does not convert."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    for tool in offered:
        try:
            json_schema_to_gbnf(json.dumps(_parameters(tool)))
        except (AssertionError, ValueError, KeyError, TypeError, RecursionError) as own:
            return UnsupportedByEndpoint(
                f"tool `{tool.name}`: the local model cannot build a grammar from its "
                f"parameters ({own or type(own).__name__})",
                param=f"tools[{tools.index(tool)}]",
            )
    return UnsupportedByEndpoint(
        f"the local model cannot build a grammar from the tools ({error})", param="tools"
    )


def admits_plain_answer(grammar: str) -> bool:
    """Whether `grammar` (built here) lets the model answer in words instead of calls."""
    return grammar.startswith(_AUTO_ROOT)


def prompt_messages(request: ChatRequest, plan: GrammarPlan | None) -> list[dict[str, str]]:
    """The conversation as the chat template takes it: earlier calls and their results in
    the `<tool_call>` form, and the plan's section (the tools, a format) in the system's."""
    messages = [_plain(message) for message in request.messages]
    if plan is None:
        return messages
    section = plan.section
    if messages and messages[0]["role"] == "system":
        messages[0] = {"role": "system", "content": f"{messages[0]['content']}\n\n{section}"}
    else:
        messages.insert(0, {"role": "system", "content": section})
    return messages


def _tools_section(tools: tuple[FunctionDefinition, ...], *, required: bool, parallel: bool) -> str:
    listed = "\n".join(tool_signature(tool) for tool in tools)
    many = "one or more calls" if parallel else "one call"
    when = "You must call a tool." if required else (
        "Call a tool when it helps answer; otherwise answer normally."
    )  # fmt: skip
    return (
        f"You can call these tools:\n<tools>\n{listed}\n</tools>\n{when} To call tools, answer "
        f'with {many} in this form only:\n{CALL_OPEN}[{{"name": "<tool name>", "arguments": '
        f"<JSON arguments>}}]{CALL_CLOSE}"
    )


def tool_signature(tool: FunctionDefinition) -> str:
    """A tool as one line, `name(arg: type, optional?: type): what it does`. The grammar holds
    the arguments to the whole schema, so the prompt spends tokens only on what the model
    chooses by: an agent's tools written out as JSON schemas (Codex's take ~4,500 tokens)
    would not leave its prompt room in the model's 8,192."""
    parameters = _parameters(tool)
    properties = parameters.get("properties")
    required = set(parameters.get("required") or ())
    arguments = ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_name(schema)}"
        for name, schema in (properties.items() if isinstance(properties, dict) else ())
    )
    summary = _first_sentence(tool.description or "")
    return f"{tool.name}({arguments})" + (f": {summary}" if summary else "")


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_name(schema.get('items'))}"
    return str(kind) if kind else "any"


def _first_sentence(description: str, limit: int = 160) -> str:
    line = description.strip().split("\n", 1)[0]
    end = line.find(". ")
    sentence = line if end < 0 else line[: end + 1]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def _plain(message: Message) -> dict[str, str]:
    role = role_of(message)
    text = text_of(message)
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = [
            {"name": call.function.name, "arguments": _arguments(call.function.arguments)}
            for call in message.tool_calls
        ]
        text += CALL_OPEN + json.dumps(calls, ensure_ascii=False) + CALL_CLOSE
    if role in ("tool", "function"):
        return {"role": "tool", "content": f"<tool_response>{text}</tool_response>"}
    return {"role": "system" if role == "developer" else role, "content": text}


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
