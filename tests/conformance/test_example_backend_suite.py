"""The suite judges backends correctly: the correct toy passes, each broken toy fails the
named scenario that catches its defect."""

from __future__ import annotations

import pytest

import tests.conformance.toy_register  # noqa: F401  (registers the toy:// schemes)
from memory_core.conformance.runner import run

BROKEN = [
    ("toy-search-leak://", "search.session_scoping"),
    ("toy-delete-raises://", "delete.first_middle_last"),
    ("toy-keeps-oldest://", "reads.limit_keeps_newest"),
    ("toy-drops-metadata://", "fidelity.metadata_types"),
]


def test_correct_toy_passes_the_whole_suite() -> None:
    [report] = run(["toy://"])
    assert report.ok, report.to_text()
    assert report.count("passed") > 90
    # the toy claims no list_sessions and no entities: verified refusals, reported n/a
    assert report.outcome("sessions.counts_and_previews") == "n/a"
    assert report.outcome("entities.add_and_find") == "n/a"
    assert report.outcome("delete.first_middle_last") == "passed"


@pytest.mark.parametrize(("url", "scenario"), BROKEN, ids=[s for _, s in BROKEN])
def test_broken_toy_fails_the_named_scenario(url: str, scenario: str) -> None:
    [report] = run([url])
    assert report.outcome(scenario) == "failed", report.to_text()
    assert not report.ok
    assert report.count("passed") > 80, "the defect should not break unrelated scenarios"
