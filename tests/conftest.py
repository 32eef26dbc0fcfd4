"""Shared fixtures. Async tests use anyio's pytest plugin (``@pytest.mark.anyio``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio unless a test parametrizes this fixture itself."""
    return "asyncio"
