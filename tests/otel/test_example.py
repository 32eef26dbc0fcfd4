"""``examples/observability.py`` prints the spans of its calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core_dev.nams_server import API_KEY, NamsTestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "observability.py"


def _run(url: str, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), url],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_example_prints_memory_spans_over_sqlite_spans() -> None:
    lines = _run("memory://")
    roots = [line.split(" [")[0] for line in lines if not line.startswith(" ")]
    assert roots == [
        "create_memory_store",
        "create_memory",
        "search_memory",
        "search_memory",
        "delete_memory",  # the example deletes its conversation again
    ]
    children = [line.strip().split(" [")[0] for line in lines if line.startswith(" ")]
    assert children[:4] == [
        "create_conversation :memory:",
        "add_message :memory:",
        "search_messages :memory:",
        "get_conversation :memory:",
    ]
    # the delete, then the full-text purge's steps (see the Erasure page)
    assert children[4:] and set(children[4:]) == {"clear_session :memory:"}
    assert all("db.system.name=sqlite" in line for line in lines if line.startswith(" "))


@pytest.mark.nams
def test_the_example_prints_http_spans_on_nams(nams_server: NamsTestServer) -> None:
    env = {"MEMORY_API_KEY": API_KEY, "MEMORY_WORKSPACE_ID": nams_server.workspace("example")}
    lines = _run(nams_server.url, **env)
    assert any(line.startswith("create_memory [CLIENT]") for line in lines)
    assert any(
        line.startswith("  POST [CLIENT]") and "http.response.status_code=201" in line
        for line in lines
    )


def test_without_the_sdk_the_example_says_what_to_install() -> None:
    hide_sdk = (
        "import runpy, sys; sys.modules['opentelemetry.sdk'] = None; "
        f"sys.argv = [{str(EXAMPLE)!r}, 'memory://']; "
        f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide_sdk], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "pip install" in done.stderr and "opentelemetry-sdk" in done.stderr
