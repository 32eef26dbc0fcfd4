"""Assertions shared by the scenarios."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

import pytest

from memory_core import (
    CapabilityWarning,
    InvalidRequestError,
    MemoryBackend,
    MemoryCoreError,
    Message,
    NotSupportedError,
)


def word() -> str:
    """A unique lower-case word made of letters only (safe for every text tokenizer)."""
    return "zq" + "".join(chr(ord("a") + int(c, 16)) for c in uuid4().hex[:14])


def assert_not_supported(
    exc: BaseException, backend: MemoryBackend, method: str | None = None
) -> None:
    """``exc`` is a NotSupportedError naming the backend and method, with a message and a
    workaround."""
    assert isinstance(exc, NotSupportedError), f"expected NotSupportedError, got {exc!r}"
    assert exc.backend == backend.name, f"NotSupportedError.backend is {exc.backend!r}"
    assert isinstance(exc.method, str) and exc.method, "NotSupportedError.method is empty"
    if method is not None:
        assert exc.method == method, f"NotSupportedError.method is {exc.method!r}, not {method!r}"
    assert isinstance(exc.message, str) and exc.message.strip(), "NotSupportedError.message empty"
    assert isinstance(exc.workaround, str) and exc.workaround.strip(), (
        "NotSupportedError.workaround is empty"
    )


@contextmanager
def refused(backend: MemoryBackend, method: str | None = None) -> Iterator[None]:
    """The block raises a complete NotSupportedError (see :func:`assert_not_supported`)."""
    with pytest.raises(NotSupportedError) as info:
        yield
    assert_not_supported(info.value, backend, method)


@contextmanager
def invalid(argument: str, kind: type[BaseException] = InvalidRequestError) -> Iterator[None]:
    """The block raises a memory-core error of type ``kind`` whose ``argument`` is
    ``argument``."""
    with pytest.raises(MemoryCoreError) as info:
        yield
    exc = info.value
    assert isinstance(exc, kind), f"expected {kind.__name__}, got {type(exc).__name__}: {exc}"
    assert isinstance(exc, InvalidRequestError), f"{exc!r} is not an InvalidRequestError"
    assert exc.argument == argument, f"error names argument {exc.argument!r}, not {argument!r}"


@contextmanager
def capability_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record every CapabilityWarning raised in the block (the list fills as it runs)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found: list[warnings.WarningMessage] = []
        yield found
    found.extend(w for w in caught if issubclass(w.category, CapabilityWarning))


def same_json(actual: Any, expected: Any, path: str = "metadata") -> None:
    """Equal as JSON values with exact types (True is not 1, 1 is not 1.0)."""
    assert type(actual) is type(expected), (
        f"{path}: {actual!r} ({type(actual).__name__}) != {expected!r} ({type(expected).__name__})"
    )
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key, value in expected.items():
            same_json(actual[key], value, f"{path}[{key!r}]")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            same_json(a, e, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def assert_time_order(messages: Sequence[Message]) -> None:
    """Timestamps are timezone-aware and never decrease in read order."""
    for m in messages:
        assert m.created_at.tzinfo is not None, f"created_at of {m.content!r} is naive"
    for a, b in itertools.pairwise(messages):
        assert a.created_at <= b.created_at, (
            f"created_at decreases: {a.content!r} {a.created_at} > {b.content!r} {b.created_at}"
        )


def ids(messages: Sequence[Message]) -> list[str]:
    """The message ids as strings, in order."""
    return [str(m.id) for m in messages]


def contents(messages: Sequence[Message]) -> list[str]:
    """The message contents, in order."""
    return [m.content for m in messages]


def assert_scores(hits: Sequence[Message]) -> None:
    """Every hit has a score in 0..1 and hits come best first."""
    for hit in hits:
        assert hit.score is not None, f"search hit {hit.content!r} has no score"
        assert 0.0 <= hit.score <= 1.0, f"score {hit.score} of {hit.content!r} is outside 0..1"
    scores = [h.score or 0.0 for h in hits]
    assert scores == sorted(scores, reverse=True), f"hits are not best first: {scores}"
