"""Reading and writing archive files: JSON Lines, gzip when the name ends in ``.gz``.

Reading is bounded: lines are cut from chunks of :data:`CHUNK` bytes, and a line longer
than the bound (:func:`max_line_bytes`, derived from the target's limits) is refused
without being held whole. Whatever is wrong with a line (too long, not UTF-8, not JSON,
not a valid record) is an :class:`ArchiveError` naming it; a compressed stream that is
cut short or corrupt ends the archive with one after the lines read before it.

Writing a path is atomic: the archive is written to a temporary file beside the target,
flushed to disk, then renamed over it, so a failed or killed export leaves the previous
archive as it was.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import secrets
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ..limits import DEFAULT_LIMITS, Limits
from .errors import ArchiveError
from .records import Record, check_kind_in_version, check_record

PathLike = str | os.PathLike[str]

CHUNK = 1 << 16  # bytes read (decompressed) at a time
# Room for a record's fields besides the bounded ones: names, ids, timestamps, and an
# embedding (the contract bounds no embedding: 1 MiB of JSON is about 40,000 numbers).
LINE_OVERHEAD = 1 << 20
# Characters of JSON one character of text may take: "\u0000" for a control character.
ESCAPED = 6
PARTIAL = ".partial"  # the suffix of the temporary file an export writes


def max_line_bytes(limits: Limits = DEFAULT_LIMITS) -> int:
    """The longest archive line a target with ``limits`` can take, in bytes: a message
    with the longest content and idempotency key, every character escaped (6 bytes), the
    largest metadata, and :data:`LINE_OVERHEAD` for the rest. 13,114,112 bytes (12.5 MiB)
    with the default limits. A longer line cannot hold a record the target accepts, and
    is refused before it is read whole."""
    return 2 * ESCAPED * limits.max_content_chars + limits.max_metadata_bytes + LINE_OVERHEAD


def open_text(path: PathLike, mode: str) -> IO[str]:
    """``path`` opened as UTF-8 text; gzip-compressed when its name ends in ``.gz``."""
    target = Path(path)
    if target.suffix == ".gz":
        raw = gzip.GzipFile(target, mode + "b")
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    return open(target, mode, encoding="utf-8", newline="\n")


def open_archive(path: PathLike) -> io.BufferedIOBase:
    """``path`` opened for reading as bytes, decompressed when its name ends in ``.gz``."""
    target = Path(path)
    if target.suffix == ".gz":
        return gzip.GzipFile(target, "rb")
    return open(target, "rb")


def dump_line(record: Record) -> str:
    """One record as one line of JSON (no spaces, non-ASCII kept, ending in ``\\n``)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


# ---------------------------------------------------------------------------- writing


@contextlib.contextmanager
def replacing(path: PathLike, *, replace: bool = True) -> Iterator[IO[str]]:
    """A text stream whose content replaces ``path`` only once the block succeeds.

    It writes ``.<name>.<random>.partial`` beside the target (gzip when the target's name
    ends in ``.gz``), then flushes it, ``fsync``s it, renames it over the target and
    ``fsync``s the folder. If the block raises (a full disk, an error of the source,
    Ctrl-C) the temporary file is removed and the target is left as it was. A killed
    process leaves the temporary file behind, never a cut-short target. A target that
    exists and is not a regular file (``/dev/stdout``, a pipe) is written in place. The
    new file gets the mode of the one it replaces (else the umask's). With
    ``replace=False`` the finished file takes the target's name only if no file has it
    (a hard link, then the temporary name removed): :class:`FileExistsError` otherwise,
    also when one appeared while the block ran.
    """
    target = Path(path)
    with contextlib.suppress(OSError):
        target = target.resolve()  # a symlink's file is replaced, not the link
    try:
        mode: int | None = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open_text(target, "w") as stream:
            yield stream
        return
    try:
        temporary, fd = _create_beside(target)
    except OSError as exc:  # named after the target, not the temporary file
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        if mode is not None and os.chmod in os.supports_fd:
            os.chmod(fd, stat.S_IMODE(mode))
        with open(fd, "wb") as raw:
            packed = (
                gzip.GzipFile(filename=target.name, mode="wb", fileobj=raw)
                if target.suffix == ".gz"
                else None
            )
            stream = io.TextIOWrapper(
                raw if packed is None else packed, encoding="utf-8", newline="\n"
            )
            try:
                yield stream
                stream.detach()  # flushes the text, leaves the file open
                if packed is not None:
                    packed.close()  # writes the gzip trailer
                raw.flush()
                os.fsync(raw.fileno())
            except BaseException:
                with contextlib.suppress(Exception):
                    stream.detach()
                if packed is not None:
                    with contextlib.suppress(Exception):
                        packed.close()
                raise
        if replace:
            os.replace(temporary, target)
        else:
            os.link(temporary, target)  # fails if the name is taken: nothing is replaced
            temporary.unlink()
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        if isinstance(exc, OSError) and exc.errno is not None and exc.filename is None:
            # A failed write names no file ("[Errno 28] No space left on device").
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    _sync_folder(target.parent)


def _create_beside(target: Path) -> tuple[Path, int]:
    """A new file ``.<name>.<random>.partial`` in the target's folder, opened for writing."""
    while True:
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}{PARTIAL}")
        try:
            return temporary, os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- reading


class BadLines:
    """Lines skipped by ``skip_bad``: how many, and the first few errors."""

    KEEP = 20

    def __init__(self) -> None:
        self.count = 0
        self.errors: list[str] = []

    def add(self, error: ArchiveError) -> None:
        self.count += 1
        if len(self.errors) < self.KEEP:
            self.errors.append(str(error))


class StreamError(ArchiveError):
    """The archive stream itself broke (a cut-short or corrupt gzip file): no line after
    it can be read. With ``skip_bad`` it ends the archive after the lines read before."""


Line = tuple[int, str | ArchiveError]
_STREAM_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, UnicodeError)


def numbered_lines(source: Any, max_bytes: int) -> Iterator[Line]:
    """``(line number, text)`` for every line of ``source``, or ``(line number,
    ArchiveError)`` for a line that is too long or not UTF-8 (the reader decides whether
    to skip it). ``source`` is a binary stream, a text stream (both read in chunks), or
    an iterable of lines (each item one line, already in memory)."""
    if hasattr(source, "read"):
        # read1: at most one read of the stream below, so the lines before a cut-short
        # gzip member are handed over before the error (read(n) would drop them).
        return _split(getattr(source, "read1", source.read), max_bytes)
    return _given(source, max_bytes)


def _given(lines: Iterable[Any], max_bytes: int) -> Iterator[Line]:
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            yield number, ArchiveError("not a line of text", line=number)
        elif len(line) > max_bytes:
            yield number, _too_long(number, max_bytes)
        else:
            try:
                size = len(line.encode("utf-8"))
            except UnicodeEncodeError:
                yield number, ArchiveError("not valid Unicode text (a lone surrogate)", line=number)
                continue
            yield number, (_too_long(number, max_bytes) if size > max_bytes else line)


def _split(read: Callable[[int], Any], max_bytes: int) -> Iterator[Line]:
    """Lines cut from the chunks ``read(CHUNK)`` returns (bytes, or text encoded here)
    until it returns an empty one. At most ``max_bytes`` of a line are held: once a line
    passes that, its error is yielded at once (a caller that stops there reads no
    further), and the rest of the line is read and dropped."""
    parts: list[bytes] = []
    number, size, too_long = 1, 0, False
    while True:
        try:
            chunk = read(CHUNK)
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8", "surrogatepass")
        except _STREAM_ERRORS as exc:
            raise StreamError(
                f"the archive stream is cut short or corrupt ({exc})", line=number
            ) from None
        if not chunk:
            break
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not too_long:
                size += len(piece)
                if size > max_bytes:
                    too_long, parts = True, []
                    yield number, _too_long(number, max_bytes)
                else:
                    parts.append(piece)
            if end < 0:
                break
            if not too_long:
                yield number, _decode(parts, number)
            number, parts, size, too_long = number + 1, [], 0, False
            start = end + 1
    if size and not too_long:
        yield number, _decode(parts, number)


def _too_long(number: int, max_bytes: int) -> ArchiveError:
    return ArchiveError(
        f"the line is longer than {max_bytes} bytes (no record the target accepts is that long)",
        line=number,
    )


def _decode(parts: list[bytes], number: int) -> str | ArchiveError:
    data = b"".join(parts)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ArchiveError(f"not UTF-8 text (byte {exc.start + 1} of the line)", line=number)


def read_records(
    lines: Iterable[str] | IO[str] | IO[bytes],
    *,
    skip_bad: bool = False,
    bad: BadLines | None = None,
    limits: Limits = DEFAULT_LIMITS,
    max_bytes: int | None = None,
) -> Iterator[tuple[int, Record]]:
    """``(line number, record)`` for every line; the first record must be the header,
    and none may follow the ``end`` record. Blank lines are skipped.

    ``lines`` is an iterable of lines, or a text or binary stream (read in chunks).
    Records are checked against ``limits`` (:func:`~.records.check_record`), and must be
    of a kind the header's format version has (no preference in a version-1 archive); a line
    longer than ``max_bytes`` (default :func:`max_line_bytes` of ``limits``) is refused
    without being read whole. A line that is not a valid record raises
    :class:`ArchiveError` with its number, or, with ``skip_bad``, is counted in ``bad``
    and skipped (a bad header always raises). A broken compressed stream raises; with
    ``skip_bad`` it is counted and ends the archive there.
    """
    bound = max_line_bytes(limits) if max_bytes is None else max_bytes
    seen_header = ended = False
    version = 0
    numbered = numbered_lines(lines, bound)
    while True:
        try:
            number, line = next(numbered)
        except StopIteration:
            break
        except StreamError as exc:
            if not skip_bad or not seen_header:
                raise
            if bad is not None:
                bad.add(exc)
            break
        try:
            if isinstance(line, ArchiveError):
                raise line
            if not line.strip():
                continue
            value = _parse(line, number)
            if not seen_header and (not isinstance(value, dict) or value.get("record") != "header"):
                raise ArchiveError("the archive does not start with a header record", line=number)
            record = check_record(value, number, limits)
            _check_place(record["record"], seen_header, ended, number)
            if record["record"] == "header":
                version = record["version"]
            check_kind_in_version(record["record"], version, number)
        except ArchiveError as exc:
            if not skip_bad or not seen_header:
                raise exc from None
            if bad is not None:
                bad.add(exc)
            continue
        seen_header, ended = True, record["record"] == "end"
        yield number, record
    if not seen_header:
        raise ArchiveError("the archive is empty (no header record)", line=None)


def _check_place(kind: str, seen_header: bool, ended: bool, number: int) -> None:
    """The header comes once, first; the end record last (an archive appended to another,
    or written to after its end, is caught here)."""
    if ended:
        raise ArchiveError("a record after the end record", line=number)
    if kind == "header" and seen_header:
        raise ArchiveError("a second header record", line=number)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(line: str, number: int) -> Any:
    try:
        return json.loads(line, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise ArchiveError(f"not JSON ({exc.args[0] if exc.args else exc})", line=number) from None
    except RecursionError:
        raise ArchiveError("not JSON (nested too deeply to read)", line=number) from None
