"""A pytest plugin for mutmut's runs: the tests most likely to kill a mutant run first.

mutmut runs, for each mutant, every test that executed its function (``-x``: the first
failure ends the run), in whatever order its set of test names comes out. A survivor
must run them all; a mutant that only a few tests can kill waits, on average, for half of
the others. Here each test that fails under a mutant is noted against the mutant's
function (``mutation-kills.jsonl`` beside this file, in the copy's ``mutants/`` folder),
and the tests of the next mutant of the same function run in this order: those that
killed its siblings most often, then the fastest (mutmut's measured durations). The clean
run mutmut makes first, with no mutant on, runs in the fastest-first order: the tests
pass in an order other than the files', which is what the reordering relies on.

Installed by ``scripts/mutation.py`` (copied into ``mutants/`` and passed as
``-p mutation_order``); without a mutant under test, outside mutmut's mutant and clean
runs (its statistics run, the forced failure), it leaves the order alone.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KILLS = HERE / "mutation-kills.jsonl"
STATS = HERE / "mutmut-stats.json"
_NOT_A_MUTANT = frozenset({"stats", "fail", "mutant_generation", "list_all_tests"})


def function_of(mutant: str) -> str:
    """mutmut's name of the mutated function: the mutant's name without ``__mutmut_N``."""
    return mutant.partition("__mutmut_")[0]


def kills_by_test(lines: Iterable[str], function: str) -> Counter[str]:
    """How often each test killed a mutant of ``function``, from the kill log's lines."""
    counted: Counter[str] = Counter()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:  # a line cut short by a run stopped mid-write
            continue
        if isinstance(entry, dict) and entry.get("function") == function:
            counted[str(entry.get("test"))] += 1
    return counted


def ordered(
    names: list[str], kills: Mapping[str, int], durations: Mapping[str, float]
) -> list[int]:
    """Positions of ``names`` in running order: most kills first, then fastest; an
    unmeasured test after the measured ones; the given order breaks ties."""
    unmeasured = float("inf")
    return sorted(
        range(len(names)),
        key=lambda i: (-kills.get(names[i], 0), durations.get(names[i], unmeasured), i),
    )


def _durations() -> dict[str, float]:
    try:
        stats = json.loads(STATS.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in stats.get("duration_by_test", {}).items()}


def _history(function: str) -> Counter[str]:
    try:
        with KILLS.open(encoding="utf-8") as log:
            return kills_by_test(log, function)
    except OSError:
        return Counter()


def _mutant() -> str | None:
    """The mutant under test; ``""`` for mutmut's clean run; ``None`` for any other."""
    name = os.environ.get("MUTANT_UNDER_TEST")
    if name is None or name in _NOT_A_MUTANT:
        return None
    return name


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Put the likely killers first (see the module's text)."""
    mutant = _mutant()
    if mutant is None:
        return
    kills = _history(function_of(mutant)) if mutant else Counter[str]()
    names = [item.nodeid for item in items]
    items[:] = [items[i] for i in ordered(names, kills, _durations())]


def pytest_runtest_logreport(report: Any) -> None:
    """Note a test that failed under a mutant against the mutant's function."""
    mutant = _mutant()
    if not mutant or not report.failed:
        return
    # the mutant too: which test killed which mutant can be checked by hand afterwards
    entry = {"function": function_of(mutant), "test": report.nodeid, "mutant": mutant}
    line = json.dumps(entry)
    # one short line in append mode: whole even when two children write at once
    with KILLS.open("a", encoding="utf-8") as log:
        log.write(line + "\n")
