"""The warning channel: capability and foreign-data warnings point at the caller's line,
``collect()`` holds them back (innermost first), ``reissue()`` issues them again."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memory_core.errors import CapabilityWarning, ForeignDataWarning
from memory_core.warning_channel import (
    collect,
    reissue,
    reissued,
    run_collecting,
    warn_capability,
    warn_foreign,
)

from .fakes import RecordingStore


@contextmanager
def recorded() -> Iterator[list[warnings.WarningMessage]]:
    """Every warning issued inside, none filtered out."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _line() -> int:
    """The caller's line number."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


@pytest.mark.parametrize(
    ("warn", "category"),
    [(warn_capability, CapabilityWarning), (warn_foreign, ForeignDataWarning)],
)
def test_a_warning_points_at_the_callers_line(warn, category) -> None:  # type: ignore[no-untyped-def]
    with recorded() as caught:
        line = _line() + 1
        warn("limit clamped to 200")
    [warning] = caught
    assert warning.category is category
    assert str(warning.message) == "limit clamped to 200"
    assert warning.filename == __file__
    assert warning.lineno == line


class _WarningStore(RecordingStore):
    """A store subclass (a class derived from memory-core's) whose method warns."""

    def clamp(self) -> None:
        warn_capability("clamped inside a store")


def test_a_warning_from_a_store_subclass_points_past_it_at_the_caller() -> None:
    store = _WarningStore()
    with recorded() as caught:
        line = _line() + 1
        store.clamp()
    [warning] = caught
    assert (warning.filename, warning.lineno) == (__file__, line)


def test_inside_collect_warnings_are_collected_not_issued() -> None:
    with recorded() as caught, collect() as found:
        warn_capability("dropped threshold")
        warn_foreign("metadata read as {}")
    assert caught == []
    assert found == [
        ("dropped threshold", CapabilityWarning),
        ("metadata read as {}", ForeignDataWarning),
    ]


def test_each_collect_starts_a_fresh_list_and_ends_with_its_block() -> None:
    with collect() as first:
        warn_capability("one")
    with collect() as second:
        pass
    assert first == [("one", CapabilityWarning)] and second == []
    assert first is not second
    with recorded() as caught:
        warn_capability("after the block")
    assert [str(w.message) for w in caught] == ["after the block"]


def test_reissue_issues_collected_warnings_at_the_callers_line() -> None:
    with collect() as found:
        warn_capability("dropped threshold")
        warn_foreign("content read as JSON")
    with recorded() as caught:
        line = _line() + 1
        reissue(found)
    assert [(str(w.message), w.category) for w in caught] == found
    assert {(w.filename, w.lineno) for w in caught} == {(__file__, line)}


def test_reissue_of_nothing_issues_nothing() -> None:
    with recorded() as caught:
        reissue([])
    assert caught == []


def test_nested_collect_the_innermost_collects() -> None:
    with collect() as outer:
        warn_capability("outer one")
        with collect() as inner:
            warn_capability("inner")
        warn_capability("outer two")
    assert inner == [("inner", CapabilityWarning)]
    assert outer == [("outer one", CapabilityWarning), ("outer two", CapabilityWarning)]


def test_reissue_inside_collect_hands_the_warnings_to_it() -> None:
    found: list[tuple[str, type[Warning]]] = [("from another thread", CapabilityWarning)]
    with recorded() as caught, collect() as enclosing:
        reissue(found)
    assert caught == []
    assert enclosing == found


def test_reissued_collects_the_block_and_issues_at_its_end() -> None:
    with recorded() as caught:
        line = _line() + 1  # the block ends on its "with" line
        with reissued():
            warn_capability("held back")
            assert caught == []
    [warning] = caught
    assert str(warning.message) == "held back"
    assert warning.category is CapabilityWarning
    assert (warning.filename, warning.lineno) == (__file__, line)


@pytest.mark.anyio
async def test_run_collecting_sends_a_calls_warnings_to_the_list() -> None:
    async def call(value: int, *, twice: bool) -> int:
        warn_capability(f"clamped {value}")
        if twice:
            warn_foreign("left out")
        return value * 2

    found: list[tuple[str, type[Warning]]] = []
    with recorded() as caught:
        assert await run_collecting(found, call, (21,), {"twice": True}) == 42
    assert caught == []
    assert found == [("clamped 21", CapabilityWarning), ("left out", ForeignDataWarning)]


@pytest.mark.anyio
async def test_run_collecting_keeps_the_warnings_of_a_call_that_fails() -> None:
    async def fails() -> None:
        warn_capability("before the failure")
        raise RuntimeError("boom")

    found: list[tuple[str, type[Warning]]] = []
    with pytest.raises(RuntimeError, match="boom"):
        await run_collecting(found, fails, (), {})
    assert found == [("before the failure", CapabilityWarning)]
