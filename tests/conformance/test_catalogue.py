"""Every broken store of :mod:`tests.conformance.catalogue` fails the scenarios its case
names, run through the real runner (:func:`memory_core.conformance.runner.run`) the way the
case says, and the honest base store (embedded or toy) passes those scenarios, run the same
way. The cases that must NOT fail are driven by the tests they name."""

from __future__ import annotations

import importlib
import inspect

import pytest

from memory_core.conformance.report import FAILED, NOT_APPLICABLE, PASSED, RunReport
from memory_core.conformance.runner import run
from memory_core.conformance.scenarios import method_name_for
from memory_core.conformance.suite import all_scenarios
from memory_core.interface import Store

from . import catalogue
from .catalogue import CATALOGUE, Case, register

register()

CAUGHT = [c for c in CATALOGUE if c.failing]
# a failure starting so is a bug of the broken store (e.g. an outdated request field), which
# would "catch" it whatever the scenario checks
CRASHES = ("AttributeError", "NameError", "TypeError")


def _outcome(report: RunReport, scenario_id: str) -> tuple[str | None, str]:
    found = [r for r in report.results if r.id == scenario_id]
    return (found[0].outcome, found[0].message) if found else (None, "")


def _honest_runs() -> dict[tuple[str, bool], list[str]]:
    """(honest URL, throwaway) -> the scenarios the broken stores run that way must fail."""
    runs: dict[tuple[str, bool], set[str]] = {}
    for case in CAUGHT:
        runs.setdefault((case.honest_url, case.throwaway), set()).update(case.failing, case.passes)
    return {key: sorted(scenarios) for key, scenarios in sorted(runs.items())}


HONEST_RUNS = _honest_runs()


def test_the_catalogue_is_large_and_names_real_scenarios() -> None:
    assert len(CATALOGUE) >= 75
    assert len({c.backend for c in CATALOGUE}) == len(CATALOGUE), "a backend is listed twice"
    assert len({c.scheme for c in CATALOGUE}) == len(CATALOGUE), "two cases share a scheme"
    known = all_scenarios()
    assert not [(c.backend.__name__, s) for c in CATALOGUE for s in c.named if s not in known]
    assert {c.base for c in CATALOGUE} == {"embedded", "toy"}  # raises for another base


def test_every_case_is_asserted_by_a_test() -> None:
    defined = {
        name
        for name, value in vars(catalogue).items()
        if inspect.isclass(value)
        and issubclass(value, Store)
        and not name.startswith("_")
        and value.__module__ == catalogue.__name__  # not the imported bases
    }
    assert defined == {c.backend.__name__ for c in CATALOGUE}, "a broken store has no case"
    for case in CATALOGUE:
        if case.failing:  # in CAUGHT: test_broken_backend_is_caught runs it
            continue
        assert case.tested_by, f"{case.backend.__name__} must fail nothing: name its test"
        module, _, function = case.tested_by.partition("::")
        test = getattr(importlib.import_module(f"tests.conformance.{module}"), function, None)
        assert callable(test), f"{case.backend.__name__}: no test {case.tested_by}"


@pytest.mark.parametrize("case", CAUGHT, ids=lambda c: c.backend.__name__)
def test_broken_backend_is_caught(case: Case) -> None:
    [report] = run([case.url], throwaway=case.throwaway, keyword=case.run_keyword)
    name = case.backend.__name__
    for scenario_id in case.failing:
        outcome, message = _outcome(report, scenario_id)
        assert outcome == FAILED, f"{name} survived {scenario_id}: {outcome}\n{report.to_text()}"
        assert message, "a failure must say why"
        assert not message.startswith(CRASHES), f"{name} crashed, not caught: {message}"
        assert all(word in message for word in case.says), f"{scenario_id}: {message}"
    for scenario_id in case.passes:
        assert _outcome(report, scenario_id)[0] == PASSED, f"{scenario_id}\n{report.to_text()}"
    for scenario_id in case.not_applicable:
        outcome = _outcome(report, scenario_id)[0]
        assert outcome == NOT_APPLICABLE, f"{scenario_id}\n{report.to_text()}"
    assert not report.ok
    assert report.count(PASSED) >= case.min_passed, "the defect should not break unrelated ones"


@pytest.mark.parametrize(
    ("url", "throwaway"),
    list(HONEST_RUNS),
    ids=[f"{url[: -len('://')]}-{'throwaway' if t else 'shared'}" for url, t in HONEST_RUNS],
)
def test_the_honest_backend_passes_every_catalogue_scenario(url: str, throwaway: bool) -> None:
    scenarios = HONEST_RUNS[(url, throwaway)]
    keyword = " or ".join(method_name_for(s) for s in scenarios)
    [report] = run([url], throwaway=throwaway, keyword=keyword)
    for scenario_id in scenarios:
        assert _outcome(report, scenario_id)[0] == PASSED, f"{scenario_id}\n{report.to_text()}"
