"""The suite's own machinery: catalog, requirement table, runner command, pytest plugin."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import Capabilities
from memory_core.conformance import catalog, runner
from memory_core.conformance.requirements import REQUIREMENTS
from memory_core.conformance.scenarios import AREAS, method_name_for
from memory_core.conformance.suite import ConformanceSuite, all_scenarios

from .catalogue import ToyKeepsOldest, case_for, register

register()

ROOT = Path(__file__).resolve().parents[2]
CLOSING = re.compile(r"^(\d+) passed, (\d+) failed$")
SOME = "reads or delete"  # two areas, for the tests of the command lines


def _python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_scenarios_md_is_current() -> None:
    assert catalog.main(["--check"]) == 0, "run: python -m memory_core.conformance.catalog --write"


def test_every_scenario_is_a_method_of_the_suite_in_a_known_area() -> None:
    scenarios = all_scenarios()
    assert len(scenarios) >= 120
    for sid, spec in scenarios.items():
        assert spec.area in AREAS
        assert spec.statement and "\n" not in spec.statement
        assert callable(getattr(ConformanceSuite, method_name_for(sid), None)), sid
    assert {s.area for s in scenarios.values()} == set(AREAS), "an area has no scenario"


def test_requirements_cover_every_flag() -> None:
    flags = Capabilities.flag_names()
    assert set(REQUIREMENTS) == set(flags)
    required = {f for s in all_scenarios().values() for f in s.requires}
    # trio is exercised by runtime.trio itself (and nothing can be checked when False)
    assert set(flags) - required == {"trio"}


def test_runner_writes_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = runner.main(["toy://", "--json", str(out), "-q", "-k", "reads or sessions"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads(out.read_text())
    assert report["backend_url"] == "toy://"
    assert report["capabilities"]["flags"]["list_sessions"] is False
    outcomes = {s["id"]: s["outcome"] for s in report["scenarios"]}
    assert outcomes["reads.limit_keeps_newest"] == "passed"
    assert outcomes["sessions.prefix"] == "n/a"
    assert set(report["scenarios"][0]) == {"id", "area", "statement", "outcome", "message"}
    totals = report["totals"]
    assert totals["scenarios"] == totals["passed"] + totals["not_applicable"] == len(outcomes)
    assert CLOSING.match(printed.strip().splitlines()[-1])
    assert "reads " in printed and "not applicable" in printed


def test_runner_fails_with_exit_1_and_names_the_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = runner.main([case_for(ToyKeepsOldest).url, "-q", "-k", "reads"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "reads.limit_keeps_newest:" in printed
    closing = CLOSING.match(printed.strip().splitlines()[-1])
    assert closing is not None and int(closing.group(2)) >= 1


def test_runner_usage_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["--no-such-option"]) == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert runner.main(["--help"]) == 0
    assert "memory-core conformance" in capsys.readouterr().out


def test_runner_reports_an_unknown_scheme_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["nosuch://x", "-q"]) == 1
    out = capsys.readouterr().out
    assert "unknown backend scheme 'nosuch'" in out
    assert out.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_runner_without_pytest_names_the_dev_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pytest", None)
    assert runner.main(["memory://"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == runner.PYTEST_MISSING and 'pip install "memory-core[conformance]"' in err


def test_runner_lists_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["--list"]) == 0
    assert "reads.limit_keeps_newest" in capsys.readouterr().out


def test_cli_runs_the_suite_on_memory_in_a_subprocess() -> None:
    # Two areas: the command is under test here; the whole suite runs on memory:// and on a
    # SQLite file in-process (test_conformance_memory.py, test_conformance_safety.py).
    result = _python("-m", "memory_core.cli", "conformance", "memory://", "-k", SOME)
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    match = CLOSING.match(last)
    assert match and int(match.group(1)) >= 10 and match.group(2) == "0", last
    assert "scenarios:" in result.stdout
    assert re.search(r"\[(\d+)/\1\]", result.stderr), "no progress indicator"


def test_memory_core_command_runs_the_suite_on_a_sqlite_file(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("memory-core")
    assert script.exists(), f"the memory-core command is not installed next to {sys.executable}"
    store = tmp_path / "cli-store.db"
    result = subprocess.run(
        [str(script), "conformance", f"sqlite:///{store}", "-q", "-k", SOME],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    match = CLOSING.match(last)
    assert match and int(match.group(1)) >= 10 and match.group(2) == "0", last
    assert f"sqlite:///{store}" in result.stdout and "scenarios:" in result.stdout
    assert store.exists(), "the suite did not run on the file it was given"


def test_plugin_runs_the_suite_by_url_in_a_subprocess() -> None:
    result = _python(
        "-m", "pytest", "-p", "tests.conformance.toy_register",
        "-p", "memory_core.conformance.plugin", "--pyargs", "memory_core.conformance",
        "--backend-url", "toy://", "-q", "-k", "reads or delete",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\d+ passed", result.stdout)
    assert "failed" not in result.stdout


def test_plugin_without_url_is_a_usage_error() -> None:
    result = _python(
        "-m", "pytest", "-p", "memory_core.conformance.plugin",
        "--pyargs", "memory_core.conformance", "-q",
    )  # fmt: skip
    assert result.returncode == 4, result.stdout + result.stderr
    assert "no backend URL given" in result.stdout + result.stderr


def test_plugin_leaves_other_test_runs_alone(tmp_path: Path) -> None:
    # Installed memory-core registers no pytest plugin: a plain project's run imports
    # nothing of ours (the test fails if any memory_core module is loaded by then).
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_plain():\n"
        "    ours = sorted(m for m in sys.modules if m.partition('.')[0] == 'memory_core')\n"
        "    assert ours == []\n"
    )
    result = _python("-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_responsiveness_takes_time_the_machine_gave_to_others_off_the_stall() -> None:
    """runtime.responsive on a loaded machine: a stall spent waiting for a CPU is not the
    backend blocking the loop; the same stall with no such wait is."""
    from memory_core.conformance.suite.runtime import _run_queue_wait, _verdict

    assert _verdict("get", took=1.0, stall=0.7, cpu=0.1) is not None  # idle 0.6 s
    assert _verdict("get", took=1.0, stall=0.7, cpu=0.1, waited=0.5) is None
    assert "never yielded" in (_verdict("get", took=1.0, stall=0.95, cpu=0.9) or "")
    # the wait comes off the call's time as well: holding the loop for 0.75 of the 0.8 s
    # the thread ran is still never yielding (SqliteOnLoop passed on a loaded machine)
    assert "never yielded" in (_verdict("get", took=1.0, stall=0.95, cpu=0.9, waited=0.2) or "")
    assert _verdict("get", took=1.0, stall=0.95, cpu=0.3, waited=0.7) is None
    before = _run_queue_wait()
    assert 0.0 <= before <= _run_queue_wait()
