"""NAMS-only features: observations, reflections, extraction status.

Extraction runs in the background on the service: these scenarios wait for it (up to
``EXTRACTION_TIMEOUT`` seconds) before they look at observations and reflections. A
service that produced none for the conversation leaves the scenario n/a (nothing could be
checked); whatever it returns is checked item by item.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from memory_core import ExtractionStatus
from memory_core.models import FINAL_EXTRACTION_STATES, PENDING_EXTRACTION_STATES

from ..checks import word
from ..harness import Harness
from ..scenarios import NOT_APPLICABLE, scenario
from .base import SuiteBase

EXTRACTION_TIMEOUT = 60.0
SHORT_WAIT = 0.05
MESSAGES = 4


async def _conversation(harness: Harness) -> str:
    """A session of MESSAGES sentences, with extraction finished."""
    handle = await harness.new_session()
    await harness.backend.bulk_add_messages(
        handle,
        [
            {"role": "user", "content": f"Sentence {n} is about {word()} in Lisbon."}
            for n in range(MESSAGES)
        ],
    )
    done = await harness.backend.wait_for_extraction(
        handle, timeout=EXTRACTION_TIMEOUT, poll_interval=0.1
    )
    assert done is True, f"extraction did not finish within {EXTRACTION_TIMEOUT} s"
    return handle


def _check_items(items: Any, kind: str) -> None:
    """A list of dicts, each with a non-empty str ``content``; n/a when empty."""
    assert type(items) is list, f"{kind}: expected a list, got {type(items).__name__}"
    if not items:
        pytest.skip(f"{NOT_APPLICABLE}the service produced no {kind} for the conversation")
    for item in items:
        assert type(item) is dict, f"{kind}: an item is a {type(item).__name__}, not a dict"
        content = item.get("content")
        assert isinstance(content, str) and content.strip(), f"{kind}: empty content {item!r}"


def _check_status(status: ExtractionStatus, count: int) -> None:
    assert type(status) is ExtractionStatus
    known = FINAL_EXTRACTION_STATES | PENDING_EXTRACTION_STATES
    assert set(status.summary) <= known, f"unknown extraction states {status.summary}"
    assert all(type(n) is int and n >= 0 for n in status.summary.values()), status.summary
    assert sum(status.summary.values()) == count, (
        f"the summary {status.summary} does not count each of the {count} messages once"
    )
    assert len(status.messages) == count, f"{len(status.messages)} items for {count} messages"


class NamsSuite(SuiteBase):
    """Scenarios of area ``nams``."""

    @scenario(
        "nams.observations",
        "after extraction, get_observations returns dicts with non-empty content",
        requires="observations",
    )
    async def test_nams_observations(self, harness: Harness) -> None:
        handle = await _conversation(harness)
        _check_items(await harness.backend.get_observations(handle), "observations")

    @scenario(
        "nams.reflections",
        "after extraction, get_reflections returns dicts with non-empty content",
        requires="reflections",
    )
    async def test_nams_reflections(self, harness: Harness) -> None:
        handle = await _conversation(harness)
        _check_items(await harness.backend.get_reflections(handle), "reflections")

    @scenario(
        "nams.extraction_status",
        "get_extraction_status counts each message once in known states; while it is "
        "pending a short wait_for_extraction times out with False on time, and a long one "
        "returns True once it is complete",
        requires="extraction_status",
    )
    async def test_nams_extraction_status(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        status = await harness.backend.get_extraction_status(handle)
        _check_status(status, 2)
        if not status.is_complete:
            start = anyio.current_time()
            quick = await harness.backend.wait_for_extraction(
                handle, timeout=SHORT_WAIT, poll_interval=0.01
            )
            took = anyio.current_time() - start
            if quick is False:
                assert took >= SHORT_WAIT * 0.9, f"timed out after {took:.3f} s"
                assert took < SHORT_WAIT + 5, f"the timeout of {SHORT_WAIT} s took {took:.1f} s"
        done = await harness.backend.wait_for_extraction(
            handle, timeout=EXTRACTION_TIMEOUT, poll_interval=0.1
        )
        assert done is True, f"extraction did not finish within {EXTRACTION_TIMEOUT} s"
        status = await harness.backend.get_extraction_status(handle)
        _check_status(status, 2)
        assert status.is_complete, f"wait_for_extraction returned True at {status.summary}"
