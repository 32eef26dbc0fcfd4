"""MiniLMEmbedder: all-MiniLM-L6-v2 computed with numpy from the model's files, checked
against the published model's similarities, refused when the files are not the model's,
and finding by meaning on the embedded store and PostgreSQL."""

from __future__ import annotations

import json
import math
import shutil
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers", reason="extra 'minilm' not installed")

from memory_core import Embedder, open_backend
from memory_core.embedding_minilm import (
    DIMENSIONS,
    MiniLMEmbedder,
    read_safetensors,
)
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_it_gives_the_published_models_similarities(embedder: MiniLMEmbedder) -> None:
    # sentence-transformers' own example for this model: 0.6660, 0.1046, 0.1411
    weather, sunny, stadium = embedder.embed_now(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    assert round(_cosine(weather, sunny), 4) == 0.6660
    assert round(_cosine(weather, stadium), 4) == 0.1046
    assert round(_cosine(sunny, stadium), 4) == 0.1411


@pytest.mark.anyio
async def test_vectors_are_unit_length_in_order_whatever_the_batch(
    embedder: MiniLMEmbedder,
) -> None:
    texts = [f"Sentence number {i} is {'much ' * i}longer." for i in range(40)]
    vectors = await embedder.embed(texts)
    assert isinstance(embedder, Embedder) and embedder.dimensions == DIMENSIONS == 384
    assert [len(v) for v in vectors] == [384] * 40
    assert all(math.isclose(_cosine(v, v), 1.0, abs_tol=1e-5) for v in vectors)
    for i in (0, 17, 39):  # alone, the same vector (to float32 rounding)
        [alone] = await embedder.embed([texts[i]])
        assert max(abs(a - b) for a, b in zip(alone, vectors[i], strict=True)) < 1e-5
    assert await embedder.embed([]) == []


def test_white_space_is_the_zero_vector(embedder: MiniLMEmbedder) -> None:
    blank, tab, word = embedder.embed_now(["", " \t\n", "word"])
    assert blank == tab == [0.0] * 384
    assert math.isclose(_cosine(word, word), 1.0, abs_tol=1e-5)


def test_a_long_text_is_read_to_the_models_limit(embedder: MiniLMEmbedder) -> None:
    head = "The cat sat on the mat. " * 80  # about 560 tokens: more than 256
    [whole, longer] = embedder.embed_now([head, head + "Completely different ending."])
    assert whole == longer


def test_it_loads_with_the_network_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    from memory_core import embedding_minilm

    embedding_minilm._load.cache_clear()
    [vector] = MiniLMEmbedder().embed_now(["a text"])
    assert len(vector) == 384
    assert repr(MiniLMEmbedder()).startswith("MiniLMEmbedder(path=")


def _copy(source: Path, target: Path) -> Path:
    target.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        shutil.copy(source / name, target / name)
    return target


def test_other_weights_are_refused(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    folder = _copy(embedder._folder, tmp_path / "model")
    assert MiniLMEmbedder(folder).embed_now(["same files"])  # a copy is the model
    with (folder / "model.safetensors").open("r+b") as weights:
        weights.seek(-4, 2)
        weights.write(b"\x00\x00\x80\x3f")  # one number changed
    with pytest.raises(ValueError, match="not the published all-MiniLM-L6-v2"):
        MiniLMEmbedder(folder)


def test_missing_files_are_named(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    folder = _copy(embedder._folder, tmp_path / "model")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        MiniLMEmbedder(folder)
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors"):
        MiniLMEmbedder(tmp_path / "nowhere")


def test_safetensors_are_read_by_their_header(tmp_path: Path) -> None:
    header = {
        "__metadata__": {"format": "pt"},
        "b": {"dtype": "F32", "shape": [3], "data_offsets": [24, 36]},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "ids": {"dtype": "I64", "shape": [1], "data_offsets": [36, 44]},
    }
    raw = json.dumps(header).encode()
    data = struct.pack("<6f", 1, 2, 3, 4, 5, 6) + struct.pack("<3f", 7, 8, 9) + bytes(8)
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    tensors = read_safetensors(path)
    assert sorted(tensors) == ["a", "b"]  # other dtypes are skipped
    assert tensors["a"].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert tensors["b"].tolist() == [7, 8, 9]


async def _finds_the_job(url: str, embedder: MiniLMEmbedder) -> None:
    async with open_backend(url, embedder=embedder) as memory:
        job = await memory.add_message("s", "user", "Being a nurse keeps me busy.")
        await memory.add_message("s", "assistant", "Noted. Anything else on your mind?")
        await memory.add_message("s", "user", "The weather was lovely at the beach.")
        hits = await memory.search_messages("What do I do for a living?", session_id="s")
    assert hits[0].id == job.id  # no word in common: found by meaning
    [query] = embedder.embed_now(["What do I do for a living?"])
    [stored] = embedder.embed_now([job.content])
    assert hits[0].score == pytest.approx(_cosine(query, stored), abs=1e-6)


@pytest.mark.anyio
async def test_search_finds_by_meaning_on_the_embedded_store(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    await _finds_the_job("memory://", embedder)
    await _finds_the_job(f"sqlite:///{tmp_path / 'm.db'}", embedder)


@pytest.mark.anyio
async def test_search_finds_by_meaning_on_postgresql(
    postgres_server: PostgresHandle, embedder: MiniLMEmbedder
) -> None:
    await _finds_the_job(schema_url(postgres_server.url, "minilm"), embedder)
