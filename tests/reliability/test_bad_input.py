"""Defects the probe found (issue 12, item 7): inputs that raised builtins now raise a
``MemoryCoreError`` naming the argument, and write nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest

from memory_core import InvalidRequestError, MemoryBackend

from .subjects import Subject

pytestmark = pytest.mark.anyio

WEST = timezone(timedelta(hours=-14))
EAST = timezone(timedelta(hours=14))
HUGE = 10**5000


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"k": value}
    return value


Call = Callable[[MemoryBackend, str], Awaitable[object]]
CASES: list[tuple[str, Call, str]] = [
    (
        "since max west",
        lambda b, s: b.get_conversation(s, since=datetime.max.replace(tzinfo=WEST)),
        "since",
    ),
    (
        "since min east",
        lambda b, s: b.get_conversation(s, since=datetime.min.replace(tzinfo=EAST)),
        "since",
    ),
    (
        "batch timestamp",
        lambda b, s: b.add_messages_batch(
            s,
            [
                {"role": "user", "content": "a"},
                {"role": "user", "content": "b", "timestamp": datetime.max.replace(tzinfo=WEST)},
            ],
        ),
        "messages[1].timestamp",
    ),
    (
        "huge int metadata",
        lambda b, s: b.add_message(s, "user", "x", metadata={"n": HUGE}),
        "metadata",
    ),
    (
        "huge int filter",
        lambda b, s: b.search_messages("x", session_id=s, metadata_filters={"n": HUGE}),
        "metadata_filters",
    ),
    (
        "huge int in batch",
        lambda b, s: b.add_messages_batch(
            s,
            [{"role": "user", "content": str(i)} for i in range(3)]
            + [{"role": "user", "content": "bad", "metadata": {"n": HUGE}}],
            batch_size=2,
        ),
        "messages[3].metadata",
    ),
    (
        "1000-deep metadata",
        lambda b, s: b.add_message(s, "user", "x", metadata=deep(1000)),
        "metadata",
    ),
    (
        "1000-deep filters",
        lambda b, s: b.search_messages("x", session_id=s, metadata_filters=deep(1000)),
        "metadata_filters",
    ),
    (
        "100000-deep metadata",
        lambda b, s: b.create_conversation(s, metadata=deep(100_000)),
        "metadata",
    ),
]


@pytest.mark.parametrize(("case", "call", "argument"), CASES, ids=[c[0] for c in CASES])
async def test_bad_values_raise_typed_errors(
    subject: Subject, case: str, call: Call, argument: str
) -> None:
    handle = await subject.session()
    before = await subject.dump()
    with pytest.raises(InvalidRequestError) as raised:
        await call(subject.backend, handle)
    assert raised.value.argument == argument
    assert await subject.dump() == before


@pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning")
async def test_nested_mapping_proxy_is_stored_as_a_dict(subject: Subject) -> None:
    """A read-only mapping inside metadata is plain JSON data: stored as a dict."""
    handle = await subject.session()
    meta = {"outer": MappingProxyType({"inner": MappingProxyType({"n": 1})}), "t": (1, 2)}
    stored = await subject.backend.add_messages_batch(
        handle, [{"role": "user", "content": "x", "metadata": meta}]
    )
    if subject.backend.capabilities.message_metadata:
        expected = {"outer": {"inner": {"n": 1}}, "t": [1, 2]}
        assert stored[0].metadata == expected
        assert (await subject.backend.get_conversation(handle)).messages[0].metadata == expected
        hits = await subject.backend.search_messages(
            "x", session_id=handle, metadata_filters=MappingProxyType({"t": [1, 2]})
        )
        assert [h.content for h in hits] == ["x"]


async def test_extreme_but_valid_timestamps_round_trip(subject: Subject) -> None:
    if not subject.backend.capabilities.caller_timestamps:
        pytest.skip("the store sets timestamps itself (caller_timestamps is False)")
    handle = await subject.session()
    low = datetime(1, 1, 1, tzinfo=UTC)
    high = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    stored = await subject.backend.add_messages_batch(
        handle,
        [
            {"role": "user", "content": "low", "timestamp": low},
            {"role": "user", "content": "high", "timestamp": high},
        ],
    )
    assert [m.created_at for m in stored] == [low, high]
    read = await subject.backend.get_conversation(handle)
    assert [m.created_at for m in read.messages] == [low, high]
    later = await subject.backend.get_conversation(handle, since=datetime.min)  # strictly after
    assert [m.content for m in later.messages] == ["high"]
    after = await subject.backend.get_conversation(handle, since=datetime.max)
    assert after.messages == []
