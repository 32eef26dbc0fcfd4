"""Without the ``otel`` extra nothing of OpenTelemetry is imported; the option still works."""

from __future__ import annotations

import ast
import inspect
import logging
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from memory_core import ConfigurationError, open_backend
from memory_core import telemetry as telemetry_module
from memory_core.telemetry.logs import LOGGERS, TraceContextFilter


def test_without_the_extra_no_opentelemetry_module_is_imported() -> None:
    program = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
        import anyio
        from memory_core import open_backend

        async def main():
            async with open_backend("memory://") as memory:
                await memory.add_message("s", "user", "hello")
                await memory.search_messages("hello", session_id="s")
                assert memory._telemetry is None

        anyio.run(main)
        loaded = [n for n, m in sys.modules.items() if n.startswith("opentelemetry") and m]
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_extra_true_is_refused_and_none_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry_module, "available", lambda: False)
    assert telemetry_module.resolve(None) is None
    with pytest.raises(ConfigurationError, match=r"memory-core\[otel\]"):
        telemetry_module.resolve(True)
    with pytest.raises(ConfigurationError, match=r"memory-core\[otel\]"):
        open_backend("memory://", telemetry=True)


def test_every_library_logger_has_the_trace_filter() -> None:
    root = Path(__file__).resolve().parents[2] / "memory_core"
    written = {
        name
        for path in root.rglob("*.py")
        for name in re.findall(r'getLogger\("(memory_core[\w.]*)"\)', path.read_text("utf-8"))
    }
    assert written <= set(LOGGERS)
    names = {
        "memory_core.server",
        "memory_core.server.access",
        "memory_core.audit",
        "memory_core.backends.nams",
        "memory_core.turns",
        "memory_core.integrations.mcp_server",
    }
    assert set(LOGGERS) == names
    for name in names:
        filters = logging.getLogger(name).filters
        assert any(isinstance(f, TraceContextFilter) for f in filters), name


def test_the_library_imports_the_api_only_and_the_extra_is_the_api_only() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in (root / "memory_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.startswith("opentelemetry.sdk") for n in names), path
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert extras["optional-dependencies"]["otel"] == ["opentelemetry-api>=1.27"]


def test_none_and_true_report_to_the_global_providers() -> None:
    default = telemetry_module.resolve(None)
    assert default is not None and default is telemetry_module.resolve(True)
    assert default.instruments._providers == (None, None)
    assert telemetry_module.resolve(False) is None


def test_every_public_operation_has_a_span() -> None:
    from memory_core import MemoryBackend
    from memory_core.telemetry.operations import OPERATIONS

    public = {
        name
        for cls in MemoryBackend.__mro__
        for name, member in vars(cls).items()
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    }
    # Lifecycle, and the batch alias that calls add_messages_batch (its span).
    assert public - {"connect", "close", "bulk_add_messages"} == set(OPERATIONS)
    for name in OPERATIONS:
        assert hasattr(getattr(MemoryBackend, name), "__wrapped__"), name
