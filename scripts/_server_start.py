"""Starting a ``memory-core serve`` process on a free loopback port, for the scripts that
drive one (``server_load.py``, ``server_hostile.py``; imported from their folder)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

START_SECONDS = 120


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(
    backend_url: str,
    *,
    key: str,
    env: dict[str, str],
    cwd: Path,
    log_level: str,
    stderr: Any = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """A ``memory-core serve`` process over ``backend_url`` accepting the API key ``key``
    (``env`` plus that key; run in ``cwd``); returns it and its root URL once it answers.
    ``stderr``: where its log goes (``None``: this process's stderr)."""
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "memory_core.cli", "serve", "--backend-url", backend_url),
            *("--port", str(port), "--log-level", log_level),
        ],
        env={**env, "NAMS_SERVER_API_KEYS": key},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with httpx.Client(trust_env=False, timeout=2) as http:
                if http.get(root + "/openapi.json").status_code == 200:
                    return process, root
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"server did not start in {START_SECONDS} s")
