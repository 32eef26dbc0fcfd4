"""``python -m memory_core_dev.tck URL``: the agent-memory TCK on the backend at ``URL``.

Runs the kit's tests (``tck/tests/v1``) through :mod:`.plugin` in a pytest process of
their own, writes the outcomes and the kit's own compliance report
(``tck.report.compliance_report``) to ``--out`` (``compliance.json``, ``compliance.html``,
``pytest.json``), prints a line per group, and exits 0 when every test of the groups the
backend must pass passed or are not applicable: Bronze always; Silver long-term when the
backend claims any long-term flag (:data:`LONG_TERM_FLAGS`); Silver reasoning when it
claims ``traces`` or ``tool_stats`` (:data:`REASONING_FLAGS`); Gold is reported. A test
is not applicable (skipped, its reason printed) only when its operation raised
``NotSupportedError`` for a flag the backend declares False: on a backend that claims
every flag, all pass.

    python -m memory_core_dev.tck memory:// --out tck-report
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from memory_core import open_backend

from .location import find

GROUPS = {
    "bronze": lambda t: "bronze" in t["keywords"],
    "silver long-term": lambda t: "test_long_term.py" in t["nodeid"],
    "silver reasoning": lambda t: "test_reasoning.py" in t["nodeid"],
    "gold": lambda t: "gold" in t["keywords"],
    "platinum": lambda t: "platinum" in t["keywords"],
}
LONG_TERM_FLAGS = (
    "entities",
    "entity_search",
    "preferences",
    "facts",
    "relationships",
    "entity_graph",
)
REASONING_FLAGS = ("traces", "tool_stats")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_core_dev.tck", description=__doc__)
    parser.add_argument("url", help="the memory-core backend URL the TCK runs on")
    parser.add_argument("--out", default="tck-report", help="folder for the reports")
    args = parser.parse_args(argv)
    kit = find()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    outcomes = out / "pytest.json"
    _run_tests(kit, args.url, outcomes)
    tests = json.loads(outcomes.read_text(encoding="utf-8"))["tests"]
    _report(kit, outcomes, out, args.url)
    required = _required(args.url)
    failing = False
    for group, belongs in GROUPS.items():
        counts = Counter(t["outcome"] for t in tests if belongs(t))
        total = sum(counts.values())
        must = group in required
        failing |= must and counts["passed"] + counts["skipped"] != total
        mark = "required" if must else "informative"
        print(
            f"{group:<17} {counts['passed']:>3}/{total:<3} passed, "
            f"{counts['skipped']} n/a  ({mark})"
        )
    for test in tests:
        if test["outcome"] == "skipped" and any(
            b(test) for g, b in GROUPS.items() if g in required
        ):
            print(f"  n/a {test['nodeid'].rpartition('/')[2]}: {test['reason']}")
    return 1 if failing else 0


def _run_tests(kit: Path, url: str, outcomes: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(kit), str(root)])}
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        "-p", "no:anyio", "--noconftest", "-p", "memory_core_dev.tck.plugin",
        f"--rootdir={kit}", "-c", os.devnull, str(kit / "tck" / "tests" / "v1"),
        "--memory-url", url, "--tck-json", str(outcomes),
    ]  # fmt: skip
    subprocess.run(command, env=env, check=False, stdout=subprocess.DEVNULL)


def _report(kit: Path, outcomes: Path, out: Path, url: str) -> None:
    sys.path.insert(0, str(kit))
    from tck.report import compliance_report

    from memory_core.version import VERSION

    report = compliance_report.generate_report(
        str(outcomes), implementation_name=f"memory-core ({url.split(':')[0]})",
        implementation_version=VERSION,
    )  # fmt: skip
    (out / "compliance.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    compliance_report.render_html_report(report, str(out / "compliance.html"))


def _required(url: str) -> set[str]:
    """The groups in which nothing may fail. A test skips as n/a only where its
    operation needs a flag the backend declares False (see :mod:`.plugin`)."""
    caps = open_backend(url).capabilities
    required = {"bronze"}
    if any(caps.supports(flag) for flag in LONG_TERM_FLAGS):
        required.add("silver long-term")
    if any(caps.supports(flag) for flag in REASONING_FLAGS):
        required.add("silver reasoning")
    return required


if __name__ == "__main__":
    sys.exit(main())
