"""The blocking methods of :class:`SyncMemoryBackend` are written out by hand: each must
have exactly the signature of the async :class:`MemoryBackend` method it mirrors, none may
be missing, and each must hand every argument to that same async method."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest

from memory_core.backend import MemoryBackend
from memory_core.sync import SyncMemoryBackend, sync_method_names

# Found here, not through sync_method_names(): the test does not trust the code it tests.
ASYNC_METHODS = sorted(
    name
    for name, member in inspect.getmembers(MemoryBackend, inspect.iscoroutinefunction)
    if not name.startswith("_")
)


def _annotations(func: Callable[..., Any]) -> dict[str, Any]:
    """``func``'s annotations (parameters and ``return``), each evaluated in the module
    that defines ``func``. Both modules use ``from __future__ import annotations``, so the
    raw annotations are strings; evaluated, ``rq.Summarizer`` in one module and
    ``Summarizer`` in another compare equal. Not ``typing.get_type_hints``: it also
    evaluates the strings nested inside aliases (``rq.Summarizer`` holds one that names
    ``Awaitable``, which neither module imports). A name imported only for type checkers
    cannot be evaluated: then both sides are compared as written."""
    try:
        return inspect.get_annotations(func, eval_str=True)
    except NameError:
        return inspect.get_annotations(func)


def _parameters(func: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(func).parameters.values()]


def test_the_async_api_is_found() -> None:
    assert {"add_message", "get_conversation", "search_messages", "connect", "close"} <= set(
        ASYNC_METHODS
    )
    assert sync_method_names() == ASYNC_METHODS


def test_no_public_async_method_is_missing_from_the_facade() -> None:
    missing = [
        name
        for name in ASYNC_METHODS
        if not callable(getattr(SyncMemoryBackend, name, None))
        or name not in vars(SyncMemoryBackend)  # written on the class, not generated
    ]
    assert missing == []


@pytest.mark.parametrize("name", ASYNC_METHODS)
def test_same_signature_as_the_async_method(name: str) -> None:
    async_method = getattr(MemoryBackend, name)
    blocking = vars(SyncMemoryBackend).get(name)
    assert blocking is not None, f"SyncMemoryBackend.{name} is missing"
    assert inspect.isfunction(blocking)
    assert not inspect.iscoroutinefunction(blocking)
    assert _parameters(blocking) == _parameters(async_method)
    assert _annotations(blocking) == _annotations(async_method)
    # the return annotation is the awaited type: present and equal on both
    assert "return" in _annotations(blocking)
    assert _annotations(blocking)["return"] == _annotations(async_method)["return"]
    if name != "close":  # close also stops the portal thread
        assert blocking.__doc__ == async_method.__doc__


# ---------------------------------------------------------------- forwarding


@pytest.fixture
def recorded() -> Iterator[tuple[SyncMemoryBackend, Any]]:
    """A facade over a mock backend (autospec: a call that does not fit the async
    signature fails), so the test sees exactly what each blocking method awaited."""
    backend = mock.create_autospec(MemoryBackend, instance=True)
    backend.name = "mock"
    memory = SyncMemoryBackend(lambda: backend, portal_backend="asyncio")
    try:
        yield memory, backend
    finally:
        memory.close()


def _sentinel_call(func: Callable[..., Any]) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """Arguments for ``func`` (a distinct object per parameter, positional where it can
    be) and the keywords the async method must receive for them."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    for parameter in list(inspect.signature(func).parameters.values())[1:]:  # not self
        value = object()
        if parameter.kind is parameter.VAR_KEYWORD:
            kwargs["some_backend_option"] = value
            expected["some_backend_option"] = value
            continue
        expected[parameter.name] = value
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD:
            args.append(value)
        else:
            kwargs[parameter.name] = value
    return args, kwargs, expected


@pytest.mark.parametrize("name", [n for n in ASYNC_METHODS if n != "close"])
def test_every_argument_reaches_the_async_method_of_the_same_name(
    recorded: tuple[SyncMemoryBackend, Any], name: str
) -> None:
    memory, backend = recorded
    result = object()
    getattr(backend, name).return_value = result
    args, kwargs, expected = _sentinel_call(getattr(SyncMemoryBackend, name))
    returns_none = _annotations(getattr(MemoryBackend, name))["return"] is None
    assert getattr(memory, name)(*args, **kwargs) is (None if returns_none else result)
    awaited = getattr(backend, name).await_args_list
    assert len(awaited) == 1
    assert awaited[0].args == ()
    assert awaited[0].kwargs == expected
    others = [n for n in ASYNC_METHODS if n != name and getattr(backend, n).await_count]
    assert others == []


@pytest.mark.parametrize("name", [n for n in ASYNC_METHODS if n != "close"])
def test_the_defaults_reach_the_async_method(
    recorded: tuple[SyncMemoryBackend, Any], name: str
) -> None:
    """Called with its required arguments only, a blocking method awaits the async one
    with the async method's own defaults (the signature test reads the declared
    defaults; this one sees the values a call really passes)."""
    memory, backend = recorded
    parameters = list(inspect.signature(getattr(MemoryBackend, name)).parameters.values())[1:]
    required = [p for p in parameters if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    args = [object() for _ in required]
    getattr(memory, name)(*args)
    expected = {p.name: value for p, value in zip(required, args, strict=True)}
    expected |= {p.name: p.default for p in parameters if p.default is not p.empty}
    assert getattr(backend, name).await_args.kwargs == expected
