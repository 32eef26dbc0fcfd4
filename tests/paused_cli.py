"""A ``memory-core`` transfer command run in a child process that stops half-way.

The child runs the command with a hook that pauses after a few records (export) or two
batches (import, copy) and says ``PAUSED`` on stderr, so a test can signal it at a known
point without any timing.

The child first puts back Python's own Ctrl-C handler: a process started from a shell
without job control (``cmd &`` in a script, as a CI runner may start the suite) inherits
SIGINT *ignored*, and then neither Python nor ``asyncio.Runner`` installs a handler, so
a test's SIGINT would be ignored and the child would wait for ever. A user's terminal
Ctrl-C is what the tests mean.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import signal
import sys
import anyio
from memory_core.cli import main
from memory_core.transfer import export, importer

signal.signal(signal.SIGINT, signal.default_int_handler)

async def pause():
    print("PAUSED", file=sys.stderr, flush=True)
    await anyio.sleep_forever()

if sys.argv[1] == "export":
    records = export.iter_records

    async def paused_records(*args, **kwargs):
        count = 0
        async for record in records(*args, **kwargs):
            yield record
            count += 1
            if count == 8:
                await pause()

    export.iter_records = paused_records
else:
    importer.HOOK_BATCH = 5
    batches = 0
    finish = importer._HookWriter.finish

    async def paused_finish(self):
        global batches
        await finish(self)
        batches += 1
        if batches == 2:
            await pause()

    importer._HookWriter.finish = paused_finish
sys.exit(main(sys.argv[1:]))
"""


def child(script: str, *args: str, cwd: Path) -> subprocess.Popen[str]:
    """``python -c script *args`` in ``cwd``, with this checkout importable; text pipes."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_paused(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """The command ``args`` running in a child, returned once it has paused half-way."""
    process = child(CHILD, *args, cwd=cwd)
    assert process.stderr is not None
    for line in process.stderr:
        if line.strip() == "PAUSED":
            return process
    pytest.fail(f"the command ended without pausing: {process.communicate()}")
