"""The suite judges the example backend correctly: the correct toy passes the whole suite.
(Its broken variants, in :mod:`tests.conformance.catalogue`, each fail the named scenario
that catches their defect, in :mod:`tests.conformance.test_catalogue`.)"""

from __future__ import annotations

from memory_core.conformance.runner import run

from .catalogue import register

register()


def test_correct_toy_passes_the_whole_suite() -> None:
    [report] = run(["toy://"])
    assert report.ok, report.to_text()
    assert report.count("passed") > 90
    # the toy claims no list_sessions and no entities: verified refusals, reported n/a
    assert report.outcome("sessions.counts_and_previews") == "n/a"
    assert report.outcome("entities.add_and_find") == "n/a"
    assert report.outcome("delete.first_middle_last") == "passed"
