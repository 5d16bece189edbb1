"""The bundled embedding model: all-MiniLM-L6-v2 as an int8 ONNX file, run by onnxruntime.

The model runs in the model host (`llmeu.modelhost.embedding_model`), a
process of its own; this provider is its client through the gateway's
`HostLink`. Vectors come back mean-pooled and L2-normalised, as
sentence-transformers makes them for this model (384 dimensions).
"""

from __future__ import annotations

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Completion, Embeddings
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.errors import ConfigError, UnsupportedByEndpoint
from llmeu.modelhost.embedding_model import DIMENSIONS
from llmeu.providers.base import ChatStream, Provider
from llmeu.providers.host_link import HostLink
from llmeu.routing.catalog import LOCAL_EMBEDDING_MODEL, Endpoint


class LocalEmbeddingsProvider(Provider):
    def __init__(self, endpoint: Endpoint, link: HostLink):
        super().__init__(endpoint)
        if endpoint.model != LOCAL_EMBEDDING_MODEL:
            raise ConfigError(
                f"no bundled embedding model named `{endpoint.model}` "
                f"(bundled: {LOCAL_EMBEDDING_MODEL})",
                field="model",
            )
        self.link = link

    async def start(self) -> None:
        await self.link.start()

    async def aclose(self) -> None:
        await self.link.aclose()

    def unavailable_reason(self) -> str | None:
        return None if self.link.up else self.link.down_reason

    async def embed(
        self, inputs: EmbeddingInputs, dimensions: int | None, hangup: Hangup
    ) -> Embeddings:
        if dimensions is not None and dimensions != DIMENSIONS:
            raise UnsupportedByEndpoint(
                f"{LOCAL_EMBEDDING_MODEL} has {DIMENSIONS} dimensions; they cannot be changed",
                param="dimensions",
            )
        if any(not isinstance(item, str) for item in inputs):
            raise UnsupportedByEndpoint(
                f"endpoint {self.endpoint.endpoint_id} ({LOCAL_EMBEDDING_MODEL}) takes text, "
                "not token ids",
                param="input",
            )
        hangup.check()
        answer = await self.link.ask({"op": "embed", "texts": [str(item) for item in inputs]})
        return Embeddings(answer["vectors"], int(answer["tokens"]))

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        raise UnsupportedByEndpoint(f"{LOCAL_EMBEDDING_MODEL} is an embedding model", param="model")

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        raise UnsupportedByEndpoint(f"{LOCAL_EMBEDDING_MODEL} is an embedding model", param="model")
