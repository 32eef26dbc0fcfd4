"""``memory-core conformance [URL ...]``: run the suite in-process and report.

Programmatic use: :func:`run` returns one
:class:`~memory_core.conformance.report.RunReport` per URL.
The command prints a per-area table, the totals and a final ``P passed, F failed`` line;
``--json FILE`` writes the machine-readable report. Exit codes: 0 every scenario passed
or was not applicable, 1 a scenario failed (or the backend could not be opened), 2 usage
error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from memory_core import MemoryCoreError, open_backend
from memory_core.settings import default_url, redact_url

from .report import (
    FAILED,
    NOT_APPLICABLE,
    PASSED,
    RunReport,
    ScenarioResult,
    closing_line,
    combined_json,
)
from .scenarios import NOT_APPLICABLE as SKIP_PREFIX
from .scenarios import OUTCOME_PROPERTY

SUITE_FILE = Path(__file__).with_name("test_conformance.py")
NOT_RUN = "not run"
PYTEST_MISSING = 'memory-core conformance needs pytest: pip install "memory-core[conformance]"'


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _Usage(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``memory-core conformance``."""
    parser = _Parser(
        prog="memory-core conformance",
        description="Run the conformance suite against backend URLs. Every scenario works "
        "in its own cf-* sessions and removes them afterwards; nothing else is touched.",
    )
    parser.add_argument(
        "urls",
        nargs="*",
        metavar="URL",
        help="backend URLs (default: MEMORY_BACKEND_URL or the embedded store in your data "
        "directory)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE")
    parser.add_argument(
        "--throwaway-store",
        action="store_true",
        help="the store may be wiped (enables scenarios that need an empty store)",
    )
    parser.add_argument(
        "--fault-control",
        metavar="MODULE:FACTORY",
        help="run the faults area: FACTORY(url) returns the FaultControl of the backend's "
        "service (the project's server with --test-admin: "
        "memory_core.conformance.fault_control:AdminFaults)",
    )
    parser.add_argument("-k", metavar="EXPR", help="only scenarios matching (pytest -k)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress indicator")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on failure")
    return parser


# ---------------------------------------------------------------------------- collecting


class _Collector:
    """pytest plugin object gathering one outcome per scenario, with progress output."""

    def __init__(self, progress: TextIO | None) -> None:
        self.progress = progress
        self.tty = bool(progress and progress.isatty())
        self.by_node: dict[str, str] = {}
        self.results: dict[str, ScenarioResult] = {}
        self.errors: list[str] = []
        self.done = 0

    def pytest_collection_finish(self, session: Any) -> None:
        from .scenarios import SCENARIOS

        for item in session.items:  # after -k and other deselection
            marker = item.get_closest_marker("conformance")
            if marker is None:
                continue
            sid = marker.args[0]
            self.by_node[item.nodeid] = sid
            spec = SCENARIOS[sid]
            self.results[sid] = ScenarioResult(sid, spec.area, spec.statement, NOT_RUN)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.errors.append(f"collection failed: {_one_line(report.longreprtext)}")

    def pytest_runtest_logreport(self, report: Any) -> None:
        sid = self.by_node.get(report.nodeid)
        if sid is None:
            return
        result = self.results[sid]
        if report.failed and result.outcome != FAILED:
            result.outcome, result.message = FAILED, _failure(report)
        elif report.skipped and result.outcome == NOT_RUN:
            result.outcome, result.message = NOT_APPLICABLE, _skip_reason(report)
        elif report.passed and report.when == "call" and result.outcome == NOT_RUN:
            verified = dict(report.user_properties).get(OUTCOME_PROPERTY)
            if verified is None:
                result.outcome = PASSED
            else:
                result.outcome = NOT_APPLICABLE
                result.message = _one_line(str(verified).removeprefix(SKIP_PREFIX))
        if report.when == "teardown":
            self.done += 1
            self._tick(sid, result.outcome)

    def finish(self) -> list[ScenarioResult]:
        """Every result; a scenario that never reported counts as failed."""
        for result in self.results.values():
            if result.outcome == NOT_RUN:
                result.outcome, result.message = FAILED, "did not run to completion"
        return list(self.results.values())

    def _tick(self, sid: str, outcome: str) -> None:
        if self.progress is None:
            return
        total = len(self.results)
        if self.tty:
            self.progress.write(f"\r\x1b[K[{self.done:>4}/{total}] {sid}")
            if self.done == total:
                self.progress.write("\r\x1b[K")
        else:
            self.progress.write({PASSED: ".", FAILED: "F"}.get(outcome, "n"))
            if self.done % 50 == 0 or self.done == total:
                self.progress.write(f" [{self.done}/{total}]\n")
        self.progress.flush()


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _failure(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    text = text.replace("Use -v to get more diff", "")
    where = "" if report.when == "call" else f"(in {report.when}) "
    return where + _one_line(text)


def _skip_reason(report: Any) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    return _one_line(reason.removeprefix(SKIP_PREFIX))


# ---------------------------------------------------------------------------- running


def _pytest_args(
    url: str, throwaway: bool, keyword: str | None, debug: bool, fault_control: str | None = None
) -> list[str]:
    args = [
        str(SUITE_FILE),
        "--backend-url",
        url,
        "-p",
        "no:cacheprovider",
        *(["-v"] if debug else ["-p", "no:terminal"]),  # --debug shows pytest's own output
        # Its warnings are not shown without the terminal, and on the way out it runs a full
        # garbage collection: 3 s a run inside a test session's heap, against 0.2 s without.
        *([] if debug else ["-p", "no:unraisableexception"]),
        "-c",
        os.devnull,  # ignore whatever pytest configuration the current directory has
        "--rootdir",
        str(SUITE_FILE.parent),
    ]
    # The plugin is opt-in (no pytest11 entry point); anyio's may not be autoloaded.
    args += ["-p", "memory_core.conformance.plugin"]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "anyio"]
    if throwaway:
        args.append("--throwaway-store")
    if keyword:
        args += ["-k", keyword]
    if fault_control:
        args += ["--fault-control", fault_control]
    return args


def run(
    urls: Sequence[str],
    *,
    throwaway: bool = False,
    keyword: str | None = None,
    progress: TextIO | None = None,
    debug: bool = False,
    fault_control: str | None = None,
) -> list[RunReport]:
    """Run the suite against each URL in-process; one report per URL.

    A backend that cannot be opened gives a report with an error and no scenarios.
    ``fault_control`` (``MODULE:FACTORY``) runs the ``faults`` area (see
    :mod:`.fault_control`).
    """
    import pytest

    from .suite import all_scenarios

    reports = []
    for url in urls:
        report = _preflight(url)
        reports.append(report)
        if report.errors:
            continue
        if progress is not None:
            progress.write(f"conformance: {report.url} ({report.backend})\n")
        collector = _Collector(progress)
        args = _pytest_args(url, throwaway, keyword, debug, fault_control)
        code = pytest.main(args, plugins=[collector])
        order = {sid: n for n, sid in enumerate(all_scenarios())}
        report.results = sorted(collector.finish(), key=lambda r: order.get(r.id, -1))
        report.errors += collector.errors
        if int(code) not in (0, 1) and not report.errors:
            report.errors.append(f"pytest stopped with exit code {int(code)}")
    return reports


def _preflight(url: str) -> RunReport:
    """Open and connect once, so a wrong URL gives one clear error, not 125 failures."""
    shown = redact_url(url)
    try:
        backend = open_backend(url)
    except MemoryCoreError as exc:
        return RunReport(shown, "?", {}, errors=[f"cannot open {shown}: {exc}"])
    report = RunReport(shown, backend.name, backend.capabilities.as_dict())
    try:
        import anyio

        async def probe() -> None:
            async with backend:
                pass

        anyio.run(probe)
    except MemoryCoreError as exc:
        report.errors.append(f"cannot connect to {shown}: {exc}")
    return report


# ---------------------------------------------------------------------------- command


def _list_scenarios() -> None:
    from .suite import all_scenarios

    for sid, spec in all_scenarios().items():
        needs = f"  [requires {', '.join(spec.requires)}]" if spec.requires else ""
        print(f"{sid:<45} {spec.statement}{needs}")


def main(argv: list[str], *, debug: bool = False) -> int:
    """Entry point of ``memory-core conformance``; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except _Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    debug = debug or args.debug
    try:
        import pytest  # noqa: F401
    except ImportError:
        print(PYTEST_MISSING, file=sys.stderr)
        return 1
    if args.list:
        _list_scenarios()
        return 0
    urls = args.urls or [default_url()]
    if not args.urls:
        print(
            f"conformance: no URL given, testing the default store {redact_url(urls[0])} "
            "(scenarios use their own cf-* sessions and remove them)",
            file=sys.stderr,
        )
    progress = None if args.quiet else sys.stderr
    try:
        reports = run(
            urls,
            throwaway=args.throwaway_store,
            keyword=args.k,
            progress=progress,
            debug=debug,
            fault_control=args.fault_control,
        )
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(f"memory-core conformance: error: {exc}", file=sys.stderr)
        return 1
    for report in reports:
        print(report.to_text())
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(combined_json(reports), indent=2) + "\n")
    print(closing_line(reports))
    return 0 if all(r.ok for r in reports) else 1
