"""Where records may stand in an archive and how lines are cut at the reader's edges:
blank lines, a second header, records after the end record, a newline that opens a read
chunk, a cut last line's number, and ``max_line_bytes`` on a stream (found missing by
mutation testing of memory_core/transfer; see memory_core/conformance/README.md,
"Mutation score")."""

from __future__ import annotations

import io

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.archive.files import CHUNK, numbered_lines
from memory_core.transfer import ArchiveError, export_memory, import_memory
from tests.transfer.sample import MESSAGES, export_lines, of_kind, populate

pytestmark = pytest.mark.anyio


async def _archive() -> list[str]:
    """The whole archive of a populated store, header included."""
    async with open_backend("memory://") as source:
        await populate(source)
        out = io.StringIO()
        await export_memory(source, out)
        return out.getvalue().splitlines()


async def _messages(target: MemoryBackend) -> list[str]:
    return [m["content"] for m in of_kind(await export_lines(target), "message")]


async def test_blank_lines_are_skipped_and_the_records_after_them_read() -> None:
    lines = await _archive()
    spaced = [lines[0], "", *lines[1:3], "   ", *lines[3:]]
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(spaced)))
        assert report.bad_lines == 0
        assert len(await _messages(target)) == MESSAGES


async def test_a_second_header_is_a_bad_line_and_skip_bad_goes_on_past_it() -> None:
    lines = await _archive()
    doubled = [lines[0], *lines[1:3], lines[0], *lines[3:]]
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="second header") as caught:
            await import_memory(target, io.StringIO("\n".join(doubled)))
        assert caught.value.line == 4
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(doubled)), skip_bad=True)
        assert report.bad_lines == 1
        assert any("line 4" in e and "second header" in e for e in report.bad_line_errors)
        assert len(await _messages(target)) == MESSAGES
        assert not report.unreadable  # the end record was still read


async def test_a_record_after_the_end_record_is_a_bad_line() -> None:
    lines = await _archive()
    assert '"record":"end"' in lines[-1]
    extra = next(line for line in lines if '"record":"message"' in line)
    appended = [*lines, extra]
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="after the end record") as caught:
            await import_memory(target, io.StringIO("\n".join(appended)))
        assert caught.value.line == len(appended)
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(appended)), skip_bad=True)
        assert report.bad_lines == 1
        assert len(await _messages(target)) == MESSAGES


def test_a_newline_that_opens_a_read_chunk_ends_the_line_before_it() -> None:
    first = "a" * CHUNK  # its newline is the first byte of the second chunk
    data = f"{first}\nsecond\nthird\n".encode()
    found = list(numbered_lines(io.BytesIO(data), 2 * CHUNK))
    assert found == [(1, first), (2, "second"), (3, "third")]


def test_a_cut_last_line_that_is_not_utf8_names_its_own_number() -> None:
    found = list(numbered_lines(io.BytesIO(b"one\ntwo\n\xff\xfe"), 100))
    assert found[:2] == [(1, "one"), (2, "two")]
    number, error = found[2]
    assert number == 3
    assert isinstance(error, ArchiveError) and error.line == 3


async def test_max_line_bytes_bounds_a_stream_too() -> None:
    lines = await _archive()
    longest = max(len(line.encode()) for line in lines)
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match=f"longer than {longest - 1} bytes"):
            await import_memory(target, io.StringIO("\n".join(lines)), max_line_bytes=longest - 1)
        assert len(await _messages(target)) < MESSAGES
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(lines)), max_line_bytes=longest)
        assert report.bad_lines == 0
        assert len(await _messages(target)) == MESSAGES
