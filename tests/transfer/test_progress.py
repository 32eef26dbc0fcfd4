"""The transfer commands' progress display, on a clock the test moves: a plain line every
``every`` seconds when not a terminal, an activity bar that walks one step per update on a
terminal (at most ten updates a second), and the final line."""

from __future__ import annotations

import io

import pytest

from memory_core.transfer import TransferReport
from memory_core.transfer import progress as progress_module
from memory_core.transfer.progress import BAR, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", fake)
    return fake


def _report(messages: int, conversations: int) -> TransferReport:
    report = TransferReport()
    report.copy("conversation", conversations)
    report.copy("message", messages)
    return report


def test_a_plain_line_every_few_seconds_off_a_terminal(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, tty=False, every=5.0)
    report = _report(1200, 3)
    clock.now += 4.9
    progress(report)
    assert out.getvalue() == ""  # not yet
    clock.now += 0.1
    progress(report)
    assert out.getvalue() == "1,200 messages, 3 conversations (240 messages/s)\n"
    clock.now += 1.0
    progress(report)  # within 5 s of the last line
    assert out.getvalue().count("\n") == 1
    clock.now += 5.0
    progress.done(report)
    assert (
        out.getvalue().splitlines()[-1] == "done: 1,200 messages, 3 conversations (109 messages/s)"
    )


def test_the_terminal_bar_walks_one_step_per_update(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, tty=True, every=5.0)  # a terminal updates every 0.1 s
    report = _report(10, 1)
    frames = []
    for _ in range(BAR + 1):
        clock.now += 0.1
        progress(report)
        frames.append(out.getvalue().split("\r")[-1])
    bars = [frame[1 : 1 + BAR] for frame in frames]
    assert bars[0] == "." + "#" + "." * (BAR - 2)
    assert bars[BAR - 1] == "#" + "." * (BAR - 1)  # wrapped round
    assert bars[BAR] == bars[0]
    assert all(len(frame.split("]")[0]) == BAR + 1 for frame in frames)
    assert frames[0].endswith("] 10 messages, 1 conversation (100 messages/s)")
    clock.now += 0.05
    progress(report)  # too soon for another frame
    assert out.getvalue().count("\r") == BAR + 1
    progress.done(report, label="copied")
    assert out.getvalue().endswith("\rcopied: 10 messages, 1 conversation (5 messages/s)\n")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_stream_says_whether_it_is_a_terminal(clock: Clock) -> None:
    screen, log = _Terminal(), io.StringIO()
    for stream in (screen, log):
        progress = Progress(stream)
        clock.now += 6.0  # past both intervals
        progress(_report(3, 1))
        progress.done(_report(3, 1))
    assert screen.getvalue().startswith("\r[") and screen.getvalue().count("\r") == 2
    assert "\r" not in log.getvalue() and log.getvalue().startswith("3 messages")


def test_off_a_terminal_the_default_is_a_line_every_five_seconds(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out)
    clock.now += 4.9
    progress(_report(1, 1))
    assert out.getvalue() == ""
    clock.now += 0.2  # 5.1 s after the start
    progress(_report(2, 1))
    assert out.getvalue().startswith("2 messages, 1 conversation")
