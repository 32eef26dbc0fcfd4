"""Writing archive records into a backend (:func:`import_memory`, :func:`write_records`)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from typing import IO, Any

from ..backend import MemoryBackend
from ..errors import InvalidRequestError
from .archive import BadLines, PathLike, open_text, read_records
from .errors import ArchiveError
from .hooks import BulkTransfer, ImportState, OnConflict
from .public_writer import PublicWriter
from .records import Record
from .report import TransferReport

ON_CONFLICT: tuple[OnConflict, ...] = ("skip", "overwrite", "new-ids")
HOOK_BATCH = 1000

Numbered = tuple[int | None, Record]


def check_on_conflict(value: Any) -> OnConflict:
    """``on_conflict`` checked: one of ``skip``, ``overwrite``, ``new-ids``."""
    for mode in ON_CONFLICT:
        if value == mode:
            return mode
    raise InvalidRequestError(
        f"{value!r} is not one of {', '.join(ON_CONFLICT)}", argument="on_conflict"
    )


async def import_memory(
    backend: MemoryBackend,
    source: PathLike | IO[str] | Iterable[str],
    *,
    on_conflict: OnConflict = "skip",
    skip_bad: bool = False,
    checkpoint: PathLike | None = None,
    on_progress: Callable[[TransferReport], None] | None = None,
) -> TransferReport:
    """Load a JSON Lines archive (a path — gzip when it ends in ``.gz`` — an open text
    stream, or lines) into ``backend`` and report what was copied, skipped, not carried.

    ``on_conflict``: ``"skip"`` (default) leaves what the target already has (same ids;
    through the public API: a session that already has messages) and adds the rest, so
    re-running an interrupted import completes it; ``"overwrite"`` replaces a
    conversation the target already has with the archive's; ``"new-ids"`` lets the target
    issue new ids and appends to sessions that exist.

    Backends with a bulk hook (embedded, Bolt) keep ids, sequence numbers and timestamps
    and need no checkpoint. Other targets are written through the public API; give
    ``checkpoint`` (a file path) to make a re-run resume where the last one stopped.

    A line that is not a valid record raises :class:`~memory_core.transfer.ArchiveError`
    with its line number, or, with ``skip_bad=True``, is counted and skipped.
    """
    mode = check_on_conflict(on_conflict)
    report = TransferReport(on_progress=on_progress)
    report.started()
    bad = BadLines()
    try:
        if isinstance(source, str | bytes) or hasattr(source, "__fspath__"):
            with open_text(source, "r") as lines:  # type: ignore[arg-type]
                await write_records(
                    backend,
                    _numbered(lines, skip_bad, bad),
                    mode,
                    report,
                    checkpoint,
                    skip_bad,
                    bad,
                )
        else:
            await write_records(
                backend, _numbered(source, skip_bad, bad), mode, report, checkpoint, skip_bad, bad
            )
    finally:
        report.bad_lines = bad.count
        report.bad_line_errors = bad.errors
    return report


async def _numbered(lines: Iterable[str], skip_bad: bool, bad: BadLines) -> AsyncIterator[Numbered]:
    for number, record in read_records(lines, skip_bad=skip_bad, bad=bad):
        yield number, record


class _References:
    """Checks that records only refer to what came before them (archive order)."""

    def __init__(self) -> None:
        self.conversations: set[str] = set()
        self.entities: set[str] = set()
        self.messages: set[str] = set()  # of the current conversation only

    def check(self, record: Record, line: int | None) -> None:
        kind = record["record"]
        if kind == "conversation":
            self.conversations.add(record["id"])
            self.messages = set()
        elif kind == "entity":
            self.entities.add(record["id"])
        elif kind == "message":
            if record["conversation_id"] not in self.conversations:
                raise ArchiveError(
                    f"message {record['id']} comes before its conversation", line=line
                )
            self.messages.add(record["id"])
        elif kind == "mention":
            if record["message_id"] not in self.messages:
                raise ArchiveError(
                    f"mention of message {record['message_id']} does not follow it", line=line
                )
            if record["entity_id"] not in self.entities:
                raise ArchiveError(
                    f"mention of entity {record['entity_id']} comes before the entity", line=line
                )


async def write_records(
    backend: MemoryBackend,
    records: AsyncIterable[Numbered],
    mode: OnConflict,
    report: TransferReport,
    checkpoint: PathLike | None = None,
    skip_bad: bool = False,
    bad: BadLines | None = None,
) -> None:
    """Write a stream of ``(line number, record)`` into ``backend`` (see
    :func:`import_memory`)."""
    await backend.connect()
    hook = backend.store.bulk_transfer() if mode != "new-ids" else None
    state = ImportState(mode, report)
    writer: _HookWriter | PublicWriter
    writer = (
        _HookWriter(hook, state) if hook is not None else PublicWriter(backend, state, checkpoint)
    )
    references = _References()
    ended = False
    try:
        async for line, record in records:
            kind = record["record"]
            if kind == "header":
                continue
            if kind == "end":
                ended = True
                continue
            try:
                references.check(record, line)
            except ArchiveError as exc:
                if not skip_bad:
                    raise
                if bad is None:
                    report.bad_lines += 1
                else:
                    bad.add(exc)
                continue
            await writer.add(record)
        await writer.finish()
    finally:
        writer.close()
    if not ended:
        report.unreadable.append("the archive has no end record: it may have been cut short")


class _HookWriter:
    """Hands records to the backend's bulk hook in batches (one transaction each)."""

    def __init__(self, hook: BulkTransfer, state: ImportState) -> None:
        self.hook = hook
        self.state = state
        self.batch: list[Record] = []

    async def add(self, record: Record) -> None:
        self.batch.append(record)
        if len(self.batch) >= HOOK_BATCH:
            await self.finish()

    async def finish(self) -> None:
        batch, self.batch = self.batch, []
        if batch:
            await self.hook.import_records(batch, self.state)

    def close(self) -> None:
        pass
