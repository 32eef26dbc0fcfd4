"""``scripts/test --newest``: the whole of ``scripts/test`` against the newest versions
``pyproject.toml`` allows, then the package and version behind each failure.

    scripts/test --newest [--no-blame] [--keep] [PYTEST ARGS]

1. ``scripts/lock --upgrade --output NEWEST`` resolves the newest allowed versions into a
   lock of their own; what differs from ``constraints.txt`` is printed.
2. ``scripts/test`` runs with that lock in a virtualenv of its own (``.venv-newest``),
   every step even after one fails; it records the failed steps and the failed tests.
3. Blame, one changed package at a time: a third virtualenv (``.venv-blame``) is
   installed from ``constraints.txt`` with only that package upgraded (and what it drags
   along, resolved by ``scripts/lock --upgrade-package``); every failed step is run again
   there (a failed pytest step: only its failed tests). A failure that comes back is that
   package's doing.

The report ends with one line per failure: the step or test, and the packages (name, locked
version -> newest) whose upgrade alone brings it back, or "only with several upgraded
together". Exit status: 0 when everything passed on the newest versions, 1 otherwise.
Not part of CI: CI installs from the lock, so a release upstream cannot stop work landing;
this command is how the lock is brought forward (CONTRIBUTING.md, "Dependencies: the lock").
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_lock import LOCK, ROOT, Change, changed_pins, read_pins

PYTEST_STEP = "pytest"
"""How the pytest step's name starts in scripts/test."""


@dataclass
class Failure:
    """A failed step of scripts/test, or one failed test of its pytest step."""

    what: str
    command: list[str]
    culprits: list[Change] = field(default_factory=list)


def _run(command: list[str], *, env: dict[str, str] | None = None, quiet: bool = False) -> int:
    print("$", shlex.join(command), flush=True)
    output = subprocess.DEVNULL if quiet else None
    return subprocess.run(command, cwd=ROOT, env=env, stdout=output, stderr=output).returncode


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


def _lock(output: Path, *upgrade: str) -> None:
    args = ["--upgrade"] if not upgrade else [a for p in upgrade for a in ("-P", p)]
    if _run(["bash", "scripts/lock", *args, "--output", str(output)], env=_env()) != 0:
        raise SystemExit(f"newest: scripts/lock {' '.join(args)} failed")


def _venv(path: Path) -> Path:
    """A virtualenv at ``path`` (made when missing) holding the lock's uv, which
    scripts/lock needs; its bin directory goes first on this process's PATH."""
    python = path / "bin" / "python"
    if not python.exists() and _run([sys.executable, "-m", "venv", str(path)]) != 0:
        raise SystemExit(f"newest: could not make a virtualenv at {path}")
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if _run([*install, "-c", str(LOCK), "uv"]) != 0:
        raise SystemExit("newest: could not install uv")
    os.environ["PATH"] = f"{path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    return python


def read_failures(steps_file: Path, tests_file: Path) -> list[Failure]:
    """The failed steps scripts/test recorded; the failed pytest steps become their failed
    tests (collection errors included), each re-run alone, once."""
    failures = []
    tests = list(dict.fromkeys(_lines(tests_file)))
    expanded = False
    for line in _lines(steps_file):
        name, _, command = line.partition("\t")
        if name.startswith(PYTEST_STEP) and tests:
            # every pytest step's failed tests are in the one list: re-run each once
            if not expanded:
                pytest = ["python", "-m", "pytest", "-p", "no:cacheprovider", "-q"]
                failures += [Failure(test, [*pytest, test]) for test in tests]
                expanded = True
            continue
        words = shlex.split(command)
        if words[:1] == ["pytest_part"]:  # scripts/test's wrapper: the command it runs
            words = words[1:]
        failures.append(Failure(name, words))
    return failures


def _lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _blame(failures: list[Failure], changes: list[Change], work: Path, venv: Path) -> None:
    python = str(_venv(venv))
    for change in changes:
        if change.new == "-":
            continue  # dropped by the newest resolution: nothing to upgrade alone
        variant = work / f"only-{change.name}.txt"
        _lock(variant, change.name)
        env = _env(
            PIP_CONSTRAINT=str(variant),
            UV_CONSTRAINT=str(variant),
            VIRTUAL_ENV=str(venv),
            PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        )
        install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        if _run([*install, "-e", ".[dev,fast]"], env=env) != 0:
            print(f"newest: could not install the lock with only {change} upgraded", flush=True)
            continue
        for failure in failures:
            print(f"-- {change}: {failure.what}", flush=True)
            if _run(failure.command, env=env, quiet=True) != 0:
                failure.culprits.append(change)


def report(failures: list[Failure], blamed: bool) -> str:
    """One line per failure: what failed, and which upgrade alone brings it back."""
    lines = []
    for failure in failures:
        if failure.culprits:
            names = "; ".join(str(c) for c in failure.culprits)
            lines.append(f"FAILED {failure.what}: {names}")
        elif blamed:
            lines.append(f"FAILED {failure.what}: only with several upgraded together")
        else:
            lines.append(f"FAILED {failure.what}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    blame = "--no-blame" not in argv
    keep = "--keep" in argv
    pytest_args = [a for a in argv if a not in ("--no-blame", "--keep")]
    work = Path(tempfile.mkdtemp(prefix="memory-core-newest-"))
    try:
        newest, venv = work / "newest.txt", ROOT / ".venv-newest"
        _venv(venv)
        _lock(newest)
        changes = changed_pins(read_pins(LOCK.read_text()), read_pins(newest.read_text()))
        print(f"newest: {len(changes)} package(s) differ from {LOCK.name}:")
        for change in changes:
            print(f"  {change}")
        steps, tests = work / "failed-steps.tsv", work / "failed-tests.txt"
        env = _env(
            MEMORY_CORE_LOCK=str(newest),
            MEMORY_CORE_VENV=str(venv),
            MEMORY_CORE_KEEP_GOING="1",
            MEMORY_CORE_FAILED_STEPS=str(steps),
            MEMORY_CORE_FAILED_TESTS=str(tests),
        )
        if _run(["bash", "scripts/test", *pytest_args], env=env) == 0:
            print(f"newest: everything passed with the newest versions ({len(changes)} changed)")
            return 0
        failures = read_failures(steps, tests)
        if blame and changes:
            _blame(failures, changes, work, ROOT / ".venv-blame")
        print(f"newest: {len(failures)} failure(s) with the newest versions:")
        print(report(failures, blame and bool(changes)))
        return 1
    finally:
        if keep:
            print(f"newest: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
