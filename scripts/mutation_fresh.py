"""Mutants that mutmut cannot switch on: those of functions a module calls while it is
being imported (Bolt's Cypher statements are built that way, once, into module constants).

mutmut imports the code once and forks a process per mutant, switching the mutant on at
call time; a statement built during the import was built before the fork, from the
original function, so every mutant of its builder "survives" whatever the tests check,
and mutmut's statistics give the builder only the first test of the run (the calls made
while the tests were collected are counted for it). Here each such mutant is measured in
a new Python process with ``MUTANT_UNDER_TEST`` set before anything is imported, so the
module builds its constants with the mutant, and all of the target's tests run (``-x``:
the first failure kills). Used by ``scripts/mutation.py --fresh-process``; the results go
to ``tests/conformance/mutation_results/TARGET-fresh.json`` and over mutmut's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

# Run in a new interpreter (the checkout's code, not the mutants): import each module of
# the package with a profiler on and print the functions of the package that ran.
_PROBE = """
import importlib, json, pkgutil, sys
package = sys.argv[1]
ran = set()
def seen(frame, event, arg):
    name = frame.f_globals.get("__name__", "")
    if event == "call" and (name == package or name.startswith(package + ".")):
        ran.add((name, frame.f_code.co_qualname))
sys.setprofile(seen)
root = importlib.import_module(package)
for info in pkgutil.walk_packages(getattr(root, "__path__", []), package + "."):
    importlib.import_module(info.name)
sys.setprofile(None)
print(json.dumps(sorted(ran)))
"""

TIMEOUT = 36  # mutmut's exit code for a timeout
# pytest's codes for a failed test (1), failed collection (2), an internal error (3) and a
# conftest that cannot be imported (4): a mutant that breaks the import fails that way
_KILLED = frozenset({1, 2, 3, 4})


def mangled(module: str, qualname: str) -> str | None:
    """mutmut's name of a function (``module.x_f``, ``module.xǁClassǁmethod``); ``None``
    for what mutmut does not mutate (nested functions, comprehensions, class bodies)."""
    parts = qualname.split(".")
    if "<" in qualname or len(parts) > 2:
        return None
    if len(parts) == 2:
        return f"{module}.xǁ{parts[0]}ǁ{parts[1]}"
    return f"{module}.x_{qualname}"


def import_time_functions(root: Path, package: str) -> set[str]:
    """mutmut's names of the functions of ``package`` that run while it is imported."""
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, package],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    found = (mangled(module, qualname) for module, qualname in json.loads(probe.stdout))
    return {name for name in found if name is not None}


def function_of(mutant: str) -> str:
    """``module.x_f`` of ``module.x_f__mutmut_3``."""
    return mutant.rpartition("__mutmut_")[0]


def run_one(
    workdir: Path, mutant: str, tests: Iterable[str], env: dict[str, str], timeout: float
) -> int:
    """Run the tests in a new process with ``mutant`` on (``""``: none): 1 when it is
    killed, 0 when it survives, :data:`TIMEOUT`, or pytest's code when it is none of
    these (5: no tests)."""
    env = dict(env, MUTANT_UNDER_TEST=mutant, PYTHONPATH=str(workdir / "mutants"))
    command = [sys.executable, "-m", "pytest", "-x", "-q", "--rootdir=.", "--tb=no"]
    command += ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "mutation_order", *tests]
    try:
        done = subprocess.run(
            command,
            cwd=workdir / "mutants",
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return TIMEOUT
    return 1 if done.returncode in _KILLED else done.returncode


def load(record: Path) -> dict[str, list[object]]:
    """The fresh-process results: mutant name → ``[hash of its function, exit code]``."""
    if not record.is_file():
        return {}
    loaded: dict[str, list[object]] = json.loads(record.read_text("utf-8"))
    return loaded


def save(record: Path, results: dict[str, list[object]]) -> None:
    """Write the results, one mutant per line (readable diffs)."""
    lines = [
        f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(v)}"
        for k, v in sorted(results.items())
    ]
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("{\n" + ",\n".join(lines) + "\n}\n", "utf-8")


def measure(
    mutants: dict[str, str],
    results: dict[str, list[object]],
    run: Callable[[str], int],
    saved: Callable[[], None],
) -> int:
    """Run each mutant (name → hash of its function) whose result is missing or was taken
    from another version of its function; ``saved`` after each. How many were run."""
    todo = [m for m, digest in sorted(mutants.items()) if results.get(m, [None])[0] != digest]
    for count, mutant in enumerate(todo, start=1):
        started = time.monotonic()
        code = run(mutant)
        results[mutant] = [mutants[mutant], code]
        saved()
        took = time.monotonic() - started
        print(f"[{count}/{len(todo)}] {mutant}: exit {code} ({took:.0f} s)", flush=True)
    return len(todo)
