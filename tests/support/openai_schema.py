"""OpenAI's published schemas of the Responses API, to validate what llmeu sends against.

`openai_responses_schema.json` holds the `Response` and `ResponseStreamEvent`
schemas of OpenAI's OpenAPI document (MIT licence, github.com/openai/openai-openapi),
with every schema they reference; see its `$comment` for the version.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

_DOCUMENT = Path(__file__).with_name("openai_responses_schema.json")


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    document = json.loads(_DOCUMENT.read_text())
    return Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})


def check_response(body: Any) -> None:
    """Raise `jsonschema.ValidationError` unless `body` is a valid `Response`."""
    _validator("Response").validate(body)


def check_stream_event(event: Any) -> None:
    """Raise `jsonschema.ValidationError` unless `event` is a valid `ResponseStreamEvent`."""
    _validator("ResponseStreamEvent").validate(event)
