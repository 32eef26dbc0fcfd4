"""Outcomes of a suite run and their text and JSON reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .scenarios import AREAS

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "n/a"


@dataclass
class ScenarioResult:
    """One scenario's outcome: ``passed``, ``failed`` or ``n/a``."""

    id: str
    area: str
    statement: str
    outcome: str
    message: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "area": self.area,
            "statement": self.statement,
            "outcome": self.outcome,
            "message": self.message,
        }


@dataclass
class RunReport:
    """The suite against one backend URL."""

    url: str  # already redacted
    backend: str
    capabilities: dict[str, Any]
    results: list[ScenarioResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # collection or internal errors

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def ok(self) -> bool:
        return not self.errors and self.count(FAILED) == 0 and bool(self.results)

    @property
    def failed(self) -> list[str]:
        """Ids of the failed scenarios."""
        return [r.id for r in self.results if r.outcome == FAILED]

    def outcome(self, scenario_id: str) -> str | None:
        """The outcome of one scenario, or None if it did not run."""
        return next((r.outcome for r in self.results if r.id == scenario_id), None)

    def totals(self) -> dict[str, int]:
        return {
            "scenarios": len(self.results),
            "passed": self.count(PASSED),
            "failed": self.count(FAILED) + len(self.errors),
            "not_applicable": self.count(NOT_APPLICABLE),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend_url": self.url,
            "backend": self.backend,
            "capabilities": self.capabilities,
            "scenarios": [r.as_dict() for r in self.results],
            "errors": list(self.errors),
            "totals": self.totals(),
        }

    def to_text(self) -> str:
        """Per-area table, totals line and the failures, one line each."""
        lines = [f"backend: {self.backend}  url: {self.url}", ""]
        if not self.results:
            return "\n".join(lines + [f"error: {e}" for e in self.errors or ["no scenarios ran"]])
        width = max(len(a) for a in AREAS)
        lines.append(f"{'area':<{width}}  {'passed':>6}  {'failed':>6}  {'n/a':>4}")
        for area in AREAS:
            rows = [r for r in self.results if r.area == area]
            if not rows:
                continue
            counts = [sum(1 for r in rows if r.outcome == o) for o in (PASSED, FAILED)]
            na = sum(1 for r in rows if r.outcome == NOT_APPLICABLE)
            lines.append(f"{area:<{width}}  {counts[0]:>6}  {counts[1]:>6}  {na:>4}")
        t = self.totals()
        lines += [
            "",
            f"{t['scenarios']} scenarios: {t['passed']} passed, {t['failed']} failed, "
            f"{t['not_applicable']} not applicable",
        ]
        failures = [r for r in self.results if r.outcome == FAILED]
        if failures or self.errors:
            lines += ["", "failures:"]
            lines += [f"  {r.id}: {r.message}" for r in failures]
            lines += [f"  (error) {e}" for e in self.errors]
        return "\n".join(lines)


def combined_json(reports: list[RunReport]) -> dict[str, Any]:
    """One report as an object; several as ``{"runs": [...], "totals": {...}}``."""
    if len(reports) == 1:
        return reports[0].as_dict()
    totals = {key: sum(r.totals()[key] for r in reports) for key in reports[0].totals()}
    return {"runs": [r.as_dict() for r in reports], "totals": totals}


def closing_line(reports: list[RunReport]) -> str:
    """The plain ``P passed, F failed`` line CI log readers look for."""
    passed = sum(r.totals()["passed"] for r in reports)
    failed = sum(r.totals()["failed"] for r in reports)
    return f"{passed} passed, {failed} failed"
