"""Collected by ``pytest -p memory_core.conformance.plugin --pyargs memory_core.conformance
--backend-url URL``: the whole suite,
parametrized over every ``--backend-url``."""

from __future__ import annotations

from memory_core.conformance.suite import ConformanceSuite


class TestConformance(ConformanceSuite):
    """The suite against the URLs given on the command line."""
