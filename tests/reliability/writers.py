"""The writer of the multi-process tests, in a module of its own: each spawned process
imports only this (and the library), not the test module with its drivers."""

from __future__ import annotations

from typing import Any

import anyio

from memory_core import open_backend


def process_writer(url: str, name: str, count: int, start: Any, **options: Any) -> None:
    """Wait at ``start`` (a barrier: every process has imported), then write ``count``
    messages to the session ``shared`` and as many to ``own-<name>``, one by one."""

    async def main() -> None:
        start.wait(timeout=180)
        async with open_backend(url, **options) as backend:
            for i in range(count):
                await backend.add_message("shared", "user", f"{name}-{i}")
                await backend.add_message(f"own-{name}", "user", f"{name}-{i}")

    anyio.run(main)
