"""NAMS-only features: observations, reflections, extraction status."""

from __future__ import annotations

from memory_core import ExtractionStatus

from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class NamsSuite(SuiteBase):
    """Scenarios of area ``nams``."""

    @scenario(
        "nams.observations",
        "get_observations returns a list of dicts for a conversation",
        requires="observations",
    )
    async def test_nams_observations(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        observations = await harness.backend.get_observations(handle)
        assert isinstance(observations, list)
        assert all(isinstance(o, dict) for o in observations)

    @scenario(
        "nams.reflections",
        "get_reflections returns a list of dicts for a conversation",
        requires="reflections",
    )
    async def test_nams_reflections(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        reflections = await harness.backend.get_reflections(handle)
        assert isinstance(reflections, list)
        assert all(isinstance(r, dict) for r in reflections)

    @scenario(
        "nams.extraction_status",
        "get_extraction_status summarises per-message progress; waiting returns a bool",
        requires="extraction_status",
    )
    async def test_nams_extraction_status(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        status = await harness.backend.get_extraction_status(handle)
        assert isinstance(status, ExtractionStatus)
        assert all(isinstance(n, int) and n >= 0 for n in status.summary.values())
        assert isinstance(status.is_complete, bool)
        done = await harness.backend.wait_for_extraction(handle, timeout=5, poll_interval=0.1)
        assert isinstance(done, bool)
