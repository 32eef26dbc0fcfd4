"""The checkpoint file of an import through the public API (targets without a bulk hook).

An append-only JSON Lines log: ``{"conversation": <archive id>, "target": <target
handle>, "done": <archive messages of it handled>}``, one line after the conversation is
created and one after every batch the target acknowledged; the last line of a
conversation wins. A preference, fact or relationship written gets ``{"kind": <kind>,
"id": <archive id>, "target": <its id in the target>}``. Lines survive a killed process
(they are flushed at once); a torn last line is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass
class Progress:
    """How far one conversation got: its handle in the target, messages handled."""

    target: str
    done: int
    base: int = 0


class Checkpoint:
    """Progress per archive conversation, read at start and appended to as work is done."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.entries: dict[str, Progress] = {}
        self.written: dict[tuple[str, str], str] = {}
        self._out: IO[str] | None = None
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    item = json.loads(line)
                    if "kind" in item:
                        self.written[(str(item["kind"]), str(item["id"]))] = str(item["target"])
                        continue
                    self.entries[str(item["conversation"])] = Progress(
                        str(item["target"]), int(item["done"]), int(item.get("base", 0))
                    )
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a kill

    def get(self, conversation: str) -> Progress | None:
        return self.entries.get(conversation)

    def forget(self, conversation: str) -> None:
        """Drop a conversation's progress (the target no longer holds it); the next
        :meth:`record` for it supersedes its lines in the file."""
        self.entries.pop(conversation, None)

    def record(self, conversation: str, target: str, done: int, base: int = 0) -> None:
        """Note progress (in memory, and in the file when there is one). ``base`` is how
        many messages the target conversation had before this import wrote to it."""
        self.entries[conversation] = Progress(target, done, base)
        self._append({"conversation": conversation, "target": target, "done": done, "base": base})

    def _append(self, line: dict[str, object]) -> None:
        if self.path is None:
            return
        if self._out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self._out.write(json.dumps(line) + "\n")
        self._out.flush()

    def target_of(self, kind: str, archive_id: str) -> str | None:
        """The id a preference, fact or relationship got in the target, if written."""
        return self.written.get((kind, archive_id))

    def wrote(self, kind: str, archive_id: str, target: str) -> None:
        """Note that a preference, fact or relationship was written (as :meth:`record`)."""
        self.written[(kind, archive_id)] = target
        self._append({"kind": kind, "id": archive_id, "target": target})

    def close(self) -> None:
        """Close the file. It stays: re-running a finished import then writes nothing."""
        if self._out is not None:
            self._out.close()
            self._out = None
