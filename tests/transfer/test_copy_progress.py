"""``memory-core copy`` counts the source before it copies, where the source can count:
the display then reads "N of TOTAL messages" (a bar that fills on a terminal); a source
it cannot count by (``--session-prefix``) reads "of ?" on a terminal. Off a terminal no
bar is drawn."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import open_backend as open_async
from memory_core.cli import main
from memory_core.sync import open_backend
from memory_core.transfer import TransferReport
from memory_core.transfer.cli import _source_total
from memory_core.transfer.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _source(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'source.db'}"
    with open_backend(url) as memory:
        for number in range(3):
            memory.add_messages_batch(
                f"s{number}",
                [{"role": "user", "content": f"m{i}"} for i in range(10)],
                user_identifier=f"u{number % 2}",
            )
    return url


def _copy(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO, *argv: str) -> str:
    monkeypatch.setattr(sys, "stderr", stream)
    assert main(["copy", *argv]) == 0
    return stream.getvalue()


def test_on_a_terminal_the_copy_says_how_many_of_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path)
    text = _copy(monkeypatch, _Terminal(), source, f"sqlite:///{tmp_path / 'a.db'}")
    last = text.split("\r")[-1]
    assert last.startswith("done: 30 of 30 messages, 3 conversations (")
    chosen = _copy(
        monkeypatch, _Terminal(), source, f"sqlite:///{tmp_path / 'b.db'}", "--users", "u1"
    )
    assert chosen.split("\r")[-1].startswith("done: 10 of 10 messages, 1 conversation (")


def test_a_source_that_cannot_be_counted_reads_of_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path)

    async def total(**scope: Any) -> int | None:
        async with open_async(source) as backend:
            return await _source_total(backend, **scope)

    assert anyio.run(lambda: total(users=None, session_prefix="s")) is None
    assert anyio.run(lambda: total(users=["u0", "nobody"], session_prefix=None)) == 20
    screen = _Terminal()
    Progress(screen, tty=True).done(TransferReport())
    assert " of ? " not in screen.getvalue()  # the final line says only what was done
    argv = [source, f"sqlite:///{tmp_path / 'c.db'}", "--session-prefix", "s"]
    text = _copy(monkeypatch, _Terminal(), *argv)
    assert text.split("\r")[-1].startswith("done: 30 messages, 3 conversations (")


def test_in_a_pipe_there_is_no_bar_only_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path)
    text = _copy(monkeypatch, io.StringIO(), source, f"sqlite:///{tmp_path / 'd.db'}")
    assert "\r" not in text and "[" not in text
    assert text.splitlines()[-1].startswith("done: 30 of 30 messages, 3 conversations (")
