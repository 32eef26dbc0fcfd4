"""Sort the mutants that survived ``mutmut run`` into classes, and score the run.

``scripts/mutation.py TARGET`` runs this in its scratch copy after ``mutmut run``; by hand,
in the folder holding mutmut's ``mutants/``::

    python -m tests.conformance.mutation_triage --target sync --prefix memory_core.

Survivors whose change the contract cannot observe are classified automatically:

* ``case-only``: a string with only its letter case changed, in the targets of
  ``CASE_INSENSITIVE`` (embedded: SQL keywords and ``sqlite3.Row`` keys ignore case);
* ``message``: the text of an error message (messages are free text; the type and
  ``argument`` of errors are what the contract fixes, and the tests check those), of a
  command's ``--help`` (``help=``, ``epilog=``, ``description=`` of argparse), or of the
  reason a transfer report gives (``.skip(kind, "…")``, ``.lose(field, "…")``: the kind
  and field are checked, the wording is free).

Survivors (and mutants no selected test executes) matching a pattern of the target in
``mutation_reasons.REASONS`` are triaged by hand; everything else is listed with its diff
under ``review``: either an equivalent mutant (add a reason) or a missing test (add it).
The non-equivalent score counts every mutant except the automatic classes and the hand
triage whose reason is not ``missing test:``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict

from tests.conformance.mutation_reasons import CASE_INSENSITIVE, REASONS

_STATUS = re.compile(r"^\s+(\S+): (.+)$")
_EMBEDDED = "memory_core.backends.embedded."
_UNKILLED = ("survived", "no tests")
_LITERALS = r"""(?:"[^"]*"\s*|'[^']*'\s*)+"""  # one string, or several concatenated
_HELP_TEXT = re.compile(rf"\b(help|epilog|description)=(None|[A-Z_]+|{_LITERALS})")
_LITERAL_LINE = re.compile(rf"^\s*{_LITERALS},?\s*$")
_REPORT_REASON = re.compile(r"\.(skip|lose)\(")
_STRINGS = re.compile(r""""[^"]*"|'[^']*'""")


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


def reason_for(name: str, target: str = "embedded", prefix: str = _EMBEDDED) -> str | None:
    """The hand triage of a survivor of ``target``, if it has one."""
    short = name.removeprefix(prefix)
    return next(
        (why for pattern, why in REASONS.get(target, []) if re.search(pattern, short)), None
    )


def _without_help(lines: list[str]) -> str:
    """The lines with argparse's help texts taken out (and what separated them); a text
    written as several literals over several lines is one help text."""
    return re.sub(r"[\s,]", "", _HELP_TEXT.sub("", " ".join(lines)))


def _inside_help(body: list[str], index: int) -> bool:
    """Whether the line at ``index`` is a string literal continuing a help text (the
    literals above it lead to ``help=``, ``epilog=`` or ``description=``)."""
    if not _LITERAL_LINE.match(body[index][1:]):
        return False
    while index > 0:
        index -= 1
        line = body[index][1:]
        if _HELP_TEXT.search(line):
            return True
        if not _LITERAL_LINE.match(line):
            return False
    return False


def classify(diff: str, case_only: bool = True) -> str:
    """``case-only`` (when ``case_only``), ``message`` or ``review`` for one survivor's diff."""
    body, removed, added = _changed(diff)
    if case_only and removed and [r.lower() for r in removed] == [a.lower() for a in added]:
        return "case-only"
    if removed and _without_help(removed) == _without_help(added):
        return "message"
    changed = [i for i, line in enumerate(body) if line.startswith("-")]
    if changed and all(_inside_help(body, i) for i in changed):
        return "message"
    index = next((i for i, line in enumerate(body) if line.startswith("-")), None)
    if index is not None:
        start = _statement_start(body, index)
        line = body[index]
        if start.startswith("raise ") or "Error(" in start or "Error(" in line:
            return "message"
        if _REPORT_REASON.search(start) and _STRINGS.sub('""', " ".join(removed)) == _STRINGS.sub(
            '""', " ".join(added)
        ):
            return "message"  # only the text of a transfer report's reason
    return "review"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Score and triage a mutmut run.")
    parser.add_argument("--target", default="embedded")
    parser.add_argument("--prefix", default=_EMBEDDED, help="module prefix of the names")
    parser.add_argument("--names", action="store_true", help="only list unkilled mutants")
    parser.add_argument(
        "--within", help="a file of mutant names, one a line: score and triage only those"
    )
    return parser.parse_args(argv)


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% for the default ``z``)."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * ((p * (1 - p) + z * z / (4 * trials)) / trials) ** 0.5
    denominator = 1 + z * z / trials
    return ((centre - spread) / denominator, (centre + spread) / denominator)


def _print_score(counts: dict[str, int], excluded: int) -> None:
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    scored = killed + sum(counts.get(status, 0) for status in _UNKILLED)
    print("mutants: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    if scored:
        print(f"score: {killed}/{scored} killed or timed out ({killed / scored:.1%})")
    if scored - excluded:
        low, high = wilson(killed, scored - excluded)
        print(
            f"non-equivalent: {killed}/{scored - excluded} ({killed / (scored - excluded):.1%}, "
            f"95% interval {low:.1%} to {high:.1%} when these are a random sample); "
            f"{excluded} excluded (equivalent, message, out of scope, not a promise)"
        )


def main(argv: list[str] | None = None) -> int:
    """Print the score, the hand triage and the survivors left to review."""
    args = _arguments(argv)
    every = statuses()
    if args.within:
        with open(args.within, encoding="utf-8") as listed:
            wanted = set(listed.read().split())
        every = {name: status for name, status in every.items() if name in wanted}
    counts: dict[str, int] = defaultdict(int)
    for status in every.values():
        counts[status] += 1
    unkilled = sorted(name for name, status in every.items() if status in _UNKILLED)
    if args.names:
        print("\n".join(unkilled))
        return 0
    classes: dict[str, list[tuple[str, str]]] = defaultdict(list)
    triaged: dict[str, list[str]] = defaultdict(list)
    for name in unkilled:
        diff = _diff(name)
        kind = classify(diff, args.target in CASE_INSENSITIVE)
        why = reason_for(name, args.target, args.prefix) if kind == "review" else None
        if why is not None:
            triaged[why].append(name)
        else:
            classes[kind].append((name, f"({every[name]})\n{diff}"))
    excluded = len(classes["case-only"]) + len(classes["message"])
    excluded += sum(len(v) for why, v in triaged.items() if not why.startswith("missing test"))
    _print_score(counts, excluded)
    print(f"\n## triaged by hand: {sum(len(v) for v in triaged.values())}\n")
    for why, names in triaged.items():
        print(f"- {len(names)}: {why}")
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
