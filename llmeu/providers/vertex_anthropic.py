"""Claude on Vertex AI: Anthropic's Messages wire behind Google's URL and OAuth2.

`POST {base_url}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/
{model}:rawPredict` (whole) and `:streamRawPredict` (Anthropic's SSE events), the
body being Anthropic's Messages body without `model` (the URL names it) and with
`"anthropic_version": "vertex-2023-10-16"`; no `x-api-key` and no
`anthropic-version` header. Authentication is the `vertex` kind's: a service
account's OAuth2 token shared by every call, a 401 refreshes it and retries once.

A kind of its own (`vertex_anthropic`) rather than a `publisher` field of the
`vertex` kind: everything a call reads and writes is Anthropic's (request
building, events, errors such as `overloaded_error`, thinking with signatures,
cache usage), only the address and the credentials are Google's. So this
provider is the anthropic kind's wire (`AnthropicWire`) with the vertex kind's
authorisation (`GoogleAuthorized`), and neither module grows a branch on the
other's behalf. Counting tokens is not offered here (Vertex bills it as a
separate model); the surface estimates instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmeu.calls.hangup import Hangup
from llmeu.calls.request import ChatRequest
from llmeu.providers.anthropic import AnthropicWire
from llmeu.providers.transport import HttpClient, Response
from llmeu.providers.vertex import GoogleAuthorized
from llmeu.routing.catalog import Endpoint

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_HEADERS = [(b"content-type", b"application/json"), (b"user-agent", b"llmeu")]
_STREAM_HEADERS = [*_HEADERS, (b"accept", b"text/event-stream")]


class VertexAnthropicProvider(AnthropicWire):
    def __init__(self, endpoint: Endpoint, client: HttpClient, environ: Mapping[str, str]):
        super().__init__(endpoint, client)
        self._google = GoogleAuthorized(endpoint, client, environ)
        self._http = self._google.http

    async def start(self) -> None:
        await self._google.start()

    def _payload(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        payload = super()._payload(request, stream=stream)
        del payload["model"]
        payload["anthropic_version"] = VERTEX_ANTHROPIC_VERSION
        return payload

    async def _post(self, body: bytes, *, stream: bool, hangup: Hangup) -> Response:
        if stream:
            return await self._google.post("streamRawPredict", "anthropic", body,
                                           _STREAM_HEADERS, hangup)  # fmt: skip
        return await self._google.post("rawPredict", "anthropic", body, _HEADERS, hangup)
