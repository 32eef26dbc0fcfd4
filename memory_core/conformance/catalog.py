"""Generate ``memory_core/conformance/SCENARIOS.md`` from the scenario decorators::

python -m memory_core.conformance.catalog --write   # regenerate the file
python -m memory_core.conformance.catalog --check   # exit 1 when the file is stale or a
                                                    # promise maps to no scenario
python -m memory_core.conformance.catalog           # print it

The file also maps each documented promise ("deliberately differs") to the scenarios that
check it (:mod:`memory_core.conformance.promises`). Everything comes from package data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memory_core import Capabilities

from .promises import GROUPS, PROMISES, SECTION, problems
from .requirements import REQUIREMENTS
from .scenarios import AREAS
from .suite import all_scenarios

CATALOG = Path(__file__).with_name("SCENARIOS.md")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The catalog as Markdown."""
    scenarios = all_scenarios()
    lines = [
        "# Conformance scenarios",
        "",
        "Generated from the `@scenario` decorators by",
        "`python -m memory_core.conformance.catalog --write`; do not edit by hand.",
        "Ids are stable: reports and CI refer to them.",
        "",
        f"{len(scenarios)} scenarios in {len(AREAS)} areas.",
        "",
        "## Capability requirements",
        "",
        "A scenario that requires a flag asserts the behaviour when the flag is True. When it",
        "is False the scenario verifies the refusal instead and is reported as not applicable.",
        "",
        "| flag | when True (asserted) | when False (verified) |",
        "| --- | --- | --- |",
    ]
    for flag in Capabilities.flag_names():
        req = REQUIREMENTS[flag]
        lines.append(f"| `{flag}` | {_cell(req.when_true)} | {_cell(req.when_false)} |")
    lines += _promise_rows()
    for area, title in AREAS.items():
        rows = [s for s in scenarios.values() if s.area == area]
        lines += ["", f"## {area}: {title} ({len(rows)})", ""]
        lines += ["| id | statement | requires |", "| --- | --- | --- |"]
        for s in rows:
            needs = ", ".join(f"`{f}`" for f in s.requires)
            lines.append(f"| `{s.id}` | {_cell(s.statement)} | {needs} |")
    return "\n".join(lines) + "\n"


def _promise_rows() -> list[str]:
    lines = [
        "",
        "## Documented promises",
        "",
        f"Each promise of *{SECTION}* and the scenarios that check it",
        "(`memory_core/conformance/promises.py`; `--check` fails when one has none).",
        "",
        "| group | promise | scenarios |",
        "| --- | --- | --- |",
    ]
    for lead, ids in PROMISES.items():
        cells = ", ".join(f"`{sid}`" for sid in ids)
        lines.append(f"| {_cell(GROUPS[lead])} | {_cell(lead)} | {cells or '**none**'} |")
    return lines


def _promise_problems() -> list[str]:
    return problems(list(PROMISES), set(all_scenarios()))


def main(argv: list[str] | None = None) -> int:
    """Print, write or check the catalog; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m memory_core.conformance.catalog")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"write {CATALOG.name}")
    group.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    unmapped = _promise_problems()
    for problem in unmapped:
        print(problem, file=sys.stderr)
    if args.write:
        CATALOG.write_text(text, encoding="utf-8")
        print(f"wrote {CATALOG}")
        return 1 if unmapped else 0
    if args.check:
        current = CATALOG.read_text(encoding="utf-8") if CATALOG.exists() else ""
        if current != text:
            print(f"{CATALOG} is stale: run python -m memory_core.conformance.catalog --write")
            return 1
        if unmapped:
            return 1
        print(f"{CATALOG} is current and every promise maps to a scenario")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
