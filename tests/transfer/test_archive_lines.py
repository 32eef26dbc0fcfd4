"""The archive layer at its edges: line length exactly at the bound, lines that span
read chunks, text streams with lone surrogates, writing in place to a pipe, the mode of
a new archive, and the checkpoint log read back (found missing by mutation testing of
memory_core/transfer; see memory_core/conformance/README.md, "Mutation score")."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import os
import secrets
import threading
from pathlib import Path

import pytest

from memory_core import open_backend
from memory_core.archive import files as archive
from memory_core.archive.errors import ArchiveError
from memory_core.archive.files import CHUNK, numbered_lines, replacing
from memory_core.archive.hooks import NOT_CARRIED, ImportState
from memory_core.archive.report import TransferReport
from memory_core.transfer import export_memory
from memory_core.transfer.checkpoint import Checkpoint, Progress


def _read(source: object, max_bytes: int) -> list[tuple[int, str]]:
    """Each line as its text, or ``!`` and the error with the line number it names."""
    found = []
    for number, line in numbered_lines(source, max_bytes):
        if isinstance(line, ArchiveError):
            assert line.line == number
            found.append((number, f"!{line}"))
        else:
            found.append((number, line))
    return found


def _source(lines: list[str], kind: str) -> object:
    text = "".join(f"{line}\n" for line in lines)
    if kind == "given":
        return list(lines)
    return io.StringIO(text) if kind == "text stream" else io.BytesIO(text.encode("utf-8"))


@pytest.mark.parametrize("kind", ["given", "text stream", "binary stream"])
def test_a_line_of_exactly_the_bound_is_read_one_byte_more_is_refused(kind: str) -> None:
    lines = ["a" * 8, "é" * 4, "b" * 9, "é" * 5, "c"]  # 8, 8, 9, 10 and 1 bytes
    found = _read(_source(lines, kind), max_bytes=8)
    assert found[:2] == [(1, "a" * 8), (2, "é" * 4)]
    assert [number for number, _ in found[2:4]] == [3, 4]
    for _, error in found[2:4]:
        assert error.startswith("!") and "longer than 8 bytes" in error
    assert found[4] == (5, "c")


@pytest.mark.parametrize("kind", ["given", "text stream"])
def test_a_lone_surrogate_is_a_bad_line_and_the_next_lines_are_read(kind: str) -> None:
    found = _read(_source(["ok", "bad \ud800 here", "fine"], kind), max_bytes=100)
    assert found[0] == (1, "ok")
    assert found[1][0] == 2 and found[1][1].startswith("!")
    assert found[2] == (3, "fine")


def test_a_line_spanning_read_chunks_is_joined_exactly() -> None:
    long = "x" * (CHUNK + 10) + "é" * CHUNK
    found = _read(io.BytesIO(f"{long}\nshort\n".encode()), max_bytes=4 * CHUNK)
    assert found == [(1, long), (2, "short")]


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_an_archive_written_to_a_pipe_is_written_in_place(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    with replacing(fifo) as stream:
        stream.write('{"récord":1}\n')
    reader.join(timeout=10)
    data = gzip.decompress(received[0]) if name.endswith(".gz") else received[0]
    assert data.decode("utf-8") == '{"récord":1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_new_archive_gets_the_umasks_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        with replacing(tmp_path / "new.jsonl") as stream:
            stream.write("x\n")
    finally:
        os.umask(umask)
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o644


def test_a_temporary_name_already_taken_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["taken", "free"])
    monkeypatch.setattr(secrets, "token_hex", lambda _: next(names))
    taken = tmp_path / ".out.jsonl.taken.partial"
    taken.write_text("someone else's")
    with replacing(tmp_path / "out.jsonl") as stream:
        stream.write("mine\n")
    assert (tmp_path / "out.jsonl").read_text() == "mine\n"
    assert taken.read_text() == "someone else's"


def test_archive_error_without_a_line_is_only_the_message() -> None:
    assert str(ArchiveError("the archive is empty", line=None)) == "source: the archive is empty"
    assert str(ArchiveError("not JSON", line=3)) == "source: line 3: not JSON"


# ---------------------------------------------------------------- the checkpoint log


def test_a_checkpoint_is_read_back_past_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "import.ckpt"
    lines = [
        {"conversation": "c1", "target": "t1", "done": 2},  # written before "base" existed
        {"conversation": "c2", "target": "t2", "done": 3, "base": 5},
    ]
    path.write_text(
        json.dumps(lines[0])
        + "\n"
        + '{"conversation": "c9", "tar'
        + "\n"  # torn by a kill
        + json.dumps(lines[1])
        + "\n",
        encoding="utf-8",
    )
    checkpoint = Checkpoint(path)
    assert checkpoint.entries == {"c1": Progress("t1", 2, 0), "c2": Progress("t2", 3, 5)}


def test_forget_drops_a_conversations_progress() -> None:
    checkpoint = Checkpoint(None)
    checkpoint.record("c1", "t1", 4)
    checkpoint.record("c2", "t2", 1)
    checkpoint.forget("c1")
    checkpoint.forget("never recorded")
    assert checkpoint.get("c1") is None
    assert checkpoint.get("c2") == Progress("t2", 1, 0)


def test_the_reason_messages_are_not_carried() -> None:
    state = ImportState(on_conflict="skip", report=TransferReport(), reasons={"c1": "why"})
    assert state.message_reason("c1") == "why"
    assert state.message_reason("c2") == NOT_CARRIED


def test_a_checkpoint_records_in_memory_and_in_a_new_folder(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "import.ckpt"
    checkpoint = Checkpoint(path)
    checkpoint.record("c1", "t1", 4)
    checkpoint.record("c2", "t2", 1, base=7)
    checkpoint.close()
    assert checkpoint.get("c1") == Progress("t1", 4, 0)
    assert checkpoint.get("c2") == Progress("t2", 1, 7)
    assert Checkpoint(path).entries == checkpoint.entries


def test_a_line_keeps_non_ascii_text_and_refuses_nan() -> None:
    assert archive.dump_line({"record": "x", "t": "é"}) == '{"record":"x","t":"é"}\n'
    with pytest.raises(ValueError):
        archive.dump_line({"record": "x", "v": float("nan")})


def test_an_empty_first_line_and_a_last_line_without_newline() -> None:
    found = _read(io.BytesIO(b"\nabc\n\n\xff"), max_bytes=100)
    assert found[:3] == [(1, ""), (2, "abc"), (3, "")]
    assert found[3][0] == 4 and found[3][1].startswith("!")


def _header() -> str:
    async def export() -> str:
        out = io.StringIO()
        async with open_backend("memory://") as empty:
            await export_memory(empty, out)
        return out.getvalue().splitlines()[0]

    return asyncio.run(export())


def test_read_records_stops_at_a_bad_line_unless_told_to_skip() -> None:
    header = _header()
    with pytest.raises(ArchiveError, match="line 2"):
        list(archive.read_records([header, "not json"]))
    assert [n for n, _ in archive.read_records([header, "not json"], skip_bad=True)] == [1]
