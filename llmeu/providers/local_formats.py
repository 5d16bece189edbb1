"""`response_format` on the bundled chat model: JSON held by a grammar, as tools are.

`json_object` gets the grammar of any JSON object; `json_schema` the grammar
llama-cpp-python's converter builds from the schema, refused (400 naming
`response_format`) where it has a keyword the grammar would not hold
(`llmeu.providers.local_tools.check_enforceable`). The system section tells the
model to answer in JSON, with the schema where there is one.
"""

from __future__ import annotations

import json
from typing import Any

from llmeu.calls.request import ChatRequest, ResponseFormat
from llmeu.errors import UnsupportedByEndpoint
from llmeu.providers.local_tools import GrammarPlan, check_enforceable, strict_strings

_PARAM = "response_format"
_CONVERTER_ERRORS = (AssertionError, ValueError, KeyError, TypeError, RecursionError)


def plan_format(request: ChatRequest) -> GrammarPlan | None:
    """The plan for a JSON `response_format`; None for text or none."""
    wanted = request.response_format
    if not isinstance(wanted, ResponseFormat) or wanted.type == "text":
        return None
    if wanted.type == "json_object":
        return GrammarPlan(_grammar({"type": "object"}), "Answer with a JSON object.", calls=False)
    given = wanted.json_schema if isinstance(wanted.json_schema, dict) else {}
    schema = given.get("schema", {"type": "object"})
    if not isinstance(schema, dict):
        raise UnsupportedByEndpoint("response_format.json_schema.schema must be an object",
                                    param=_PARAM)  # fmt: skip
    check_enforceable(schema, _PARAM, "response_format")
    shown = json.dumps(schema, ensure_ascii=False)
    return GrammarPlan(_grammar(schema), f"Answer with JSON matching this schema: {shown}",
                       calls=False)  # fmt: skip


def _grammar(schema: dict[str, Any]) -> str:
    from llama_cpp import llama_grammar

    schema_converter: Any = llama_grammar.SchemaConverter  # untyped upstream
    converter = schema_converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    try:
        converter.visit(converter.resolve_refs(schema, ""), "")
    except _CONVERTER_ERRORS as error:
        raise UnsupportedByEndpoint(
            f"response_format: the local model cannot build a grammar from its schema "
            f"({error or type(error).__name__})",
            param=_PARAM,
        ) from None
    return strict_strings(converter.format_grammar()) + "\n"
