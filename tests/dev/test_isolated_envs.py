"""The environments of their own (scripts/test_isolated NAME): each has its requirement
lines, its lock and its tests, scripts/test runs both of its steps, and the main suite
never collects tests/isolated (the frameworks there are not installed here)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ISOLATED = sorted(p.name for p in (ROOT / "tests" / "isolated").iterdir() if p.is_dir())
sys.path.insert(0, str(ROOT / "scripts"))
import check_lock  # noqa: E402


def test_there_is_one_at_least() -> None:
    assert "crewai" in ISOLATED


@pytest.mark.parametrize("name", ISOLATED)
def test_each_isolated_environment_has_its_input_lock_and_steps(name: str) -> None:
    requirements = (ROOT / "locks" / f"{name}.in").read_text(encoding="utf-8")
    assert any(line.startswith("-e .[") for line in requirements.splitlines())
    lock = (ROOT / "locks" / f"{name}.txt").read_text(encoding="utf-8")
    assert f"scripts/lock_isolated {name}" in lock.splitlines()[1]  # the command that made it
    pins = check_lock.read_pins(lock)
    assert "memory-core" not in pins and "pytest" in pins  # the project is never pinned
    steps = [line.split() for line in _joined_lines(ROOT / "scripts" / "test")]
    steps = [words for words in steps if words[:1] == ["step"]]
    assert ["bash", "scripts/lock_isolated", name, "--check"] in [w[-4:] for w in steps]
    assert ["bash", "scripts/test_isolated", name] in [w[-3:] for w in steps]
    assert (ROOT / "tests" / "isolated" / name / "conftest.py").is_file()


def _joined_lines(path: Path) -> list[str]:
    """The script's lines with backslash continuations joined."""
    return path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()


def test_the_main_suite_never_collects_the_isolated_tests() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = options["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--ignore=tests/isolated" in addopts
    # collect `tests` as the main run does, every other folder and file left out: nothing
    # (without the option, tests/isolated/crewai/conftest.py stops the run: no crewai here)
    found = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "--collect-only", "-q", "tests"),
            *("--ignore-glob=tests/[!i]*", "--ignore=tests/integrations", "-p", "no:randomly"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 5, found.stdout[-2000:] + found.stderr[-2000:]  # no tests
    assert "isolated" not in found.stdout + found.stderr


def test_a_stale_isolated_environment_names_its_own_scripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "locks" / "someframework.txt"
    lock.parent.mkdir()
    lock.write_text("nothing==1\n", encoding="utf-8")
    assert check_lock.main([str(lock)]) == 1
    err = capsys.readouterr().err
    assert "run scripts/lock_isolated someframework" in err
    assert "install with scripts/test_isolated someframework" in err
