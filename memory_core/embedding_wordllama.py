"""``WordLlamaEmbedder``: a small embedding model whose weights come in its wheel.

Needs the ``embed`` extra (``pip install "memory-core[embed]"``: the ``wordllama`` package,
MIT licensed, with numpy, ``tokenizers`` and ``safetensors``). The model (WordLlama's
``l2_supercat``: a token embedding table distilled from a large language model's,
averaged over the text's tokens) and its tokenizer are files of the installed package:
nothing is downloaded, at install or at run time, and no GPU is used. About 1 s to load
(once per process), then tens of microseconds a text on one core.

It finds what a text is about where the words differ ("What do I do for a living?" and
"I work as a nurse"), less well than a sentence-transformer model would; plug in any
other :class:`~memory_core.embedding.Embedder` (an ``async embed(texts)`` and
``dimensions``) for that.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from .embedding import BlockingEmbedder

DIMENSIONS = (64, 128, 256)
"""The vector lengths the bundled model gives (256, or its first 64 or 128 values)."""


class WordLlamaEmbedder(BlockingEmbedder):
    """The bundled WordLlama model as an :class:`~memory_core.embedding.Embedder`.

    ``dimensions``: 256 (the default), or 128 or 64 (the model's first values, a little
    less accurate, a smaller index). Vectors are unit length; a text with no tokens (the
    empty string) gets the zero vector, which no vector search finds.
    """

    def __init__(self, dimensions: int = 256) -> None:
        if type(dimensions) is not int or dimensions not in DIMENSIONS:
            raise ValueError(f"dimensions must be one of {', '.join(map(str, DIMENSIONS))}")
        self.dimensions = dimensions
        self._model = _model(dimensions)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(dimensions={self.dimensions})"

    def embed_now(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, in the calling thread."""
        import numpy

        with numpy.errstate(invalid="ignore", divide="ignore"):  # a text of no tokens: 0/0
            vectors: list[list[float]] = self._model.embed(texts, norm=True).tolist()
        return [v if not math.isnan(v[0]) else [0.0] * self.dimensions for v in vectors]


@functools.cache
def _model(dimensions: int) -> Any:
    import wordllama

    # The package's own files: its default lookup (tokenizer/, not the tokenizers/ it
    # ships) misses the bundled tokenizer and would download it.
    bundled = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(
        cache_dir=bundled,
        disable_download=True,
        trunc_dim=None if dimensions == 256 else dimensions,
    )
