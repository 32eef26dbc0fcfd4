"""Collected by ``pytest --pyargs conformance --backend-url URL``: the whole suite,
parametrized over every ``--backend-url``."""

from __future__ import annotations

from conformance.suite import ConformanceSuite


class TestConformance(ConformanceSuite):
    """The suite against the URLs given on the command line."""
