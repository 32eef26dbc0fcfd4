"""Lifecycle, configuration and runtime (trio)."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from memory_core import Capabilities, ConfigurationError, MemoryCoreError, open_backend

from ..harness import Harness
from ..scenarios import NOT_APPLICABLE, scenario
from .base import SuiteBase


class RuntimeSuite(SuiteBase):
    """Scenarios of area ``runtime``."""

    @scenario(
        "runtime.capabilities_consistent",
        "capabilities are frozen, fixed per backend object, and their limits agree with the flags",
    )
    async def test_runtime_capabilities_consistent(self, harness: Harness) -> None:
        caps = harness.caps
        assert isinstance(caps, Capabilities)
        assert harness.backend.capabilities is harness.backend.capabilities
        assert isinstance(type(harness.backend).capabilities, Capabilities)
        with pytest.raises(dataclasses.FrozenInstanceError):
            caps.delete_message = not caps.delete_message  # type: ignore[misc]
        for name in Capabilities.limit_names():
            value = getattr(caps, name)
            assert value is None or (type(value) is int and value > 0), f"{name}={value!r}"
        assert caps.default_messages_per_read > 0
        if caps.max_messages_per_read is not None:
            assert caps.default_messages_per_read <= caps.max_messages_per_read
        assert caps.full_history == (caps.max_messages_per_read is None), (
            "full_history must be True exactly when max_messages_per_read is None"
        )

    @scenario(
        "runtime.lifecycle",
        "async with connects and closes; close twice is fine; use after close is refused",
    )
    async def test_runtime_lifecycle(self, harness: Harness) -> None:
        backend = harness.open_unconnected()
        async with backend as opened:
            assert opened is backend
            handle = await harness.new_session(backend=backend)
            await backend.add_message(handle, "user", "inside")
            assert await harness.contents(handle, backend=backend) == ["inside"]
            await backend.clear_session(handle)
        await backend.close()
        with pytest.raises(MemoryCoreError):
            await backend.get_conversation(handle)
        harness.forget(handle)  # cleared above; the instance is closed now

    @scenario("runtime.unknown_option", "an unknown open option raises ConfigurationError")
    async def test_runtime_unknown_option(self, harness: Harness) -> None:
        with pytest.raises(ConfigurationError):
            harness.open_unconnected(no_such_option_anywhere=1)

    @scenario(
        "runtime.no_secret_in_repr",
        "the backend's repr and describe() never show a password or API key",
    )
    async def test_runtime_no_secret_in_repr(self, harness: Harness) -> None:
        secrets = [urlsplit(harness.url).password or ""]
        secrets += [
            str(v)
            for k, v in harness.options.items()
            if any(w in k.lower() for w in ("password", "key", "token", "secret"))
        ]
        secrets = [s for s in secrets if len(s) >= 4]
        shown = repr(harness.backend) + harness.backend.describe()
        for secret in secrets:
            assert secret not in shown, "a secret appears in repr() or describe()"
        assert isinstance(harness.backend.describe(), str)

    @scenario("runtime.trio", "the backend works under trio (anyio) when it claims trio")
    def test_runtime_trio(
        self, conformance_backend_url: str, conformance_backend_options: dict[str, Any]
    ) -> None:
        backend = open_backend(conformance_backend_url, **conformance_backend_options)
        if not backend.capabilities.trio:
            pytest.skip(f"{NOT_APPLICABLE}trio is False (the backend is asyncio-only)")

        async def exercise() -> list[str]:
            async with Harness(conformance_backend_url, conformance_backend_options) as h:
                handle = await h.new_session()
                await h.backend.add_message(handle, "user", "under trio")
                await h.fill(handle, 2)
                return await h.contents(handle)

        assert anyio.run(exercise, backend="trio") == ["under trio", "m0", "m1"]
