"""Sort the mutants that survived ``mutmut run`` into classes, for conformance/MUTATION.md.

Run after ``python -m mutmut run`` (see conformance/README.md, "Mutation score")::

    python -m tests.conformance.mutation_triage > /tmp/triage.md

Survivors whose change the contract cannot observe are classified automatically:

* ``case-only``: a string with only its letter case changed: SQL keywords and the keys
  of ``sqlite3.Row`` are case-insensitive;
* ``message``: the text of an error message (messages are free text; the type and
  ``argument`` of errors are what the contract fixes, and the suite checks those).

Everything else is listed with its diff under ``review`` for a human to triage: either
an equivalent mutant (say why) or a missing scenario (add it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

_STATUS = re.compile(r"^\s+(\S+): (.+)$")


def _mutmut(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", *args], capture_output=True, text=True, check=False
    )
    return done.stdout


def statuses() -> dict[str, str]:
    """Every mutant name with its status (``killed``, ``survived``, ``no tests`` …)."""
    found = {}
    for line in _mutmut("results", "--all", "true").splitlines():
        match = _STATUS.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _diff(name: str) -> str:
    """The diff of one mutant (mutmut's own ``show``, in-process: much faster)."""
    try:
        from mutmut.__main__ import find_mutant, get_diff_for_mutant
    except ImportError:  # another mutmut version: ask the command
        return _mutmut("show", name)
    return str(get_diff_for_mutant(name, path=find_mutant(name).path))


def _changed(diff: str) -> tuple[list[str], list[str], list[str]]:
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++", "@@", "#"))]
    removed = [line[1:] for line in body if line.startswith("-")]
    added = [line[1:] for line in body if line.startswith("+")]
    return body, removed, added


def _statement_start(body: list[str], index: int) -> str:
    """The first line of the statement the line at ``index`` belongs to (walking up
    through continuation lines)."""
    while index > 0:
        above = body[index - 1][1:].rstrip()
        if above.endswith(("(", ",", "[", "{")) or body[index][1:].lstrip().startswith(
            ('"', "f'", 'f"', "'", ")")
        ):
            index -= 1
            continue
        break
    return body[index][1:].strip()


def classify(diff: str) -> str:
    """``case-only``, ``message`` or ``review`` for one survivor's diff."""
    body, removed, added = _changed(diff)
    if removed and [r.lower() for r in removed] == [a.lower() for a in added]:
        return "case-only"
    index = next((i for i, line in enumerate(body) if line.startswith("-")), None)
    if index is not None:
        start = _statement_start(body, index)
        line = body[index]
        if start.startswith("raise ") or "Error(" in start or "Error(" in line:
            return "message"
    return "review"


def main() -> int:
    every = statuses()
    counts: dict[str, int] = defaultdict(int)
    for status in every.values():
        counts[status] += 1
    survivors = sorted(name for name, status in every.items() if status == "survived")
    classes: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in survivors:
        diff = _diff(name)
        classes[classify(diff)].append((name, diff))
    killed = counts.get("killed", 0)
    scored = killed + counts.get("survived", 0) + counts.get("timeout", 0)
    print(f"mutants: {len(every)}; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    if scored:
        print(f"score: {killed + counts.get('timeout', 0)}/{scored} killed or timed out")
    for kind in ("case-only", "message", "review"):
        print(f"\n## {kind}: {len(classes[kind])}\n")
        for name, diff in classes[kind]:
            if kind == "review":
                print(f"### {name}\n\n```diff\n{diff.strip()}\n```\n")
            else:
                print(f"- {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
