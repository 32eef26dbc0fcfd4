"""Every example in examples/frameworks runs on ``memory://``, on the NAMS server and on
PostgreSQL."""

from __future__ import annotations

import importlib.util
import os
import runpy
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from memory_core import CapabilityWarning
from memory_core_dev.nams_server import API_KEY
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "frameworks"
NEEDS = {
    "langchain_history": ("langchain_core", "I am Ana."),
    "openai_agents_session": ("agents", "I am Ana."),
    "pydantic_ai_history": ("pydantic_ai", "4 messages stored"),
    "llamaindex_chat_store": ("llama_index.core", "user: I am Ana."),
    "strands_session": ("strands", "I am Ana."),
    "agent_framework_store": ("agent_framework", "I am Ana."),
    "adk_memory": ("google.adk", "You are Ana."),
    "mcp_client": ("mcp", "I am Ana."),
    "langgraph_store": ("langgraph.graph", "Hello Ana, visit 2."),
}
# Examples a backend lacks the capability for: what they print there instead (the refusal).
REFUSED_ON_NAMS = {"langgraph_store": "not on this backend: nams.MemoryStore: needs the 'facts'"}


# Examples of a framework tested in an environment of its own, and the tests that run them.
ISOLATED = {"crewai_memory": "tests/isolated/crewai/test_crewai.py"}


def test_every_example_is_covered() -> None:
    assert {p.stem for p in EXAMPLES.glob("*.py")} == set(NEEDS) | set(ISOLATED)
    for stem, tests in ISOLATED.items():
        assert f"{stem}.py" in (ROOT / tests).read_text(encoding="utf-8")


def _run(
    name: str,
    url: str,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> str:
    """Run the example as ``__main__`` in this process (a subprocess would re-import the
    frameworks for every example); the MCP example starts its server subprocess itself."""
    module, _ = NEEDS[name]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} not installed (its memory-core extra is absent)")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if name == "mcp_client":  # mcp's stdio client binds sys.stderr at import: own process
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / f"{name}.py"), url],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout
    monkeypatch.setattr(sys, "argv", [name, url])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)  # text-only backends say so
        runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    return capfd.readouterr().out


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_on_memory(
    name: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    assert NEEDS[name][1] in _run(name, "memory://", {}, monkeypatch, capfd)


@pytest.mark.nams
@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_on_nams(
    name: str,
    nams_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    env = {"MEMORY_API_KEY": API_KEY, "MEMORY_WORKSPACE_ID": nams_server.workspace("examples")}
    expected = REFUSED_ON_NAMS.get(name, NEEDS[name][1])
    assert expected in _run(name, nams_server.url, env, monkeypatch, capfd)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_on_postgres(
    name: str,
    postgres_server: PostgresHandle,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    url = schema_url(postgres_server.url, "examples")
    assert NEEDS[name][1] in _run(name, url, {}, monkeypatch, capfd)
