"""The progress display of the transfer commands: one updating line with an activity bar
on a terminal, a plain line every few seconds otherwise (logs, pipes)."""

from __future__ import annotations

import time
from typing import TextIO

from ..archive.report import TransferReport, counted

BAR = 20


class Progress:
    """Call it with the report as records flow (``on_progress=``); :meth:`done` at the end.

    Counts are messages handled (copied or skipped) and the rate since the start. The
    total is not known in advance (everything streams), so the terminal bar shows activity
    rather than a fraction.
    """

    def __init__(self, stream: TextIO, *, tty: bool | None = None, every: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.every = 0.1 if self.tty else every
        self.start = time.monotonic()
        self.last = self.start
        self.ticks = 0

    def line(self, report: TransferReport) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        done = report.messages_done
        conversations = counted(report.copied["conversation"], "conversation")
        return f"{counted(done, 'message')}, {conversations} ({done / elapsed:,.0f} messages/s)"

    def __call__(self, report: TransferReport) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            self.ticks += 1
            spot = self.ticks % BAR
            bar = "." * spot + "#" + "." * (BAR - spot - 1)
            self.stream.write(f"\r[{bar}] {self.line(report)}")
        else:
            self.stream.write(self.line(report) + "\n")
        self.stream.flush()

    def done(self, report: TransferReport, label: str = "done") -> None:
        """The final count line (ends the terminal's updating line)."""
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}{label}: {self.line(report)}\n")
        self.stream.flush()
