"""Scenario registry: every test of the suite has a stable id and a one-line statement.

A scenario is an ``async`` test method decorated with :func:`scenario`::

    @scenario("reads.limit_keeps_newest", "limit=N returns the newest N messages, oldest first")
    async def test_reads_limit_keeps_newest(self, harness): ...

The id is ``<area>.<name>``; the method must be named ``test_<area>_<name>`` so ids and
test names cannot drift apart. ``requires`` names capability flags (SQLAlchemy-style
requirements): when one is False the body is not run; the flag's refusal from
:mod:`memory_core.conformance.requirements` is verified instead and the scenario is reported as not
applicable: the pytest test passes (the refusal is what it checked) and records the
``conformance_outcome`` user property ``n/a: …`` that the runner reports. A scenario that
cannot check anything at all (trio on an asyncio-only backend, an empty store on a store
that is neither multi-tenant nor throwaway) is a pytest skip whose reason starts with
``n/a:``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])

# area -> title, in report order
AREAS: dict[str, str] = {
    "writes": "writes",
    "reads": "reads and ordering",
    "limits": "limits",
    "since": "since",
    "fidelity": "content and metadata fidelity",
    "idempotency": "idempotency",
    "delete": "delete",
    "clear": "clear",
    "sessions": "sessions",
    "conversations": "conversations",
    "search": "search",
    "context": "context",
    "summary": "summary",
    "tenancy": "tenancy",
    "entities": "entities and mentions",
    "entity_search": "entity search",
    "entity_updates": "entities: reads by name and alias, updates, merges",
    "preferences": "long-term memory: preferences",
    "facts": "long-term memory: facts",
    "relationships": "long-term memory: relationships between entities",
    "traces": "reasoning memory: traces, steps, tool calls and links",
    "tool_stats": "reasoning memory: tool statistics",
    "similar_traces": "reasoning memory: similar traces and step search",
    "nams": "NAMS-only features",
    "errors": "errors and bad input",
    "aliasing": "id aliasing",
    "runtime": "lifecycle and runtime",
    "faults": "faults on the wire (network backends with fault knobs)",
    "portability": "portability: one application, compared with the embedded reference",
    "erasure": "erasure: forget_user",
    "stats": "stats: what a store holds",
}

NOT_APPLICABLE = "n/a: "
OUTCOME_PROPERTY = "conformance_outcome"


@dataclass(frozen=True)
class Scenario:
    """One registered scenario."""

    id: str
    statement: str
    requires: tuple[str, ...]
    test_name: str

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]


SCENARIOS: dict[str, Scenario] = {}


def method_name_for(scenario_id: str) -> str:
    """The method name a scenario id must have."""
    return "test_" + scenario_id.replace(".", "_")


def scenario(
    scenario_id: str, statement: str, *, requires: tuple[str, ...] | str = ()
) -> Callable[[F], F]:
    """Register a test method as scenario ``scenario_id`` (see the module docstring)."""
    flags = (requires,) if isinstance(requires, str) else tuple(requires)
    area, _, name = scenario_id.partition(".")
    if area not in AREAS or not name:
        raise ValueError(f"scenario id {scenario_id!r} must be '<area>.<name>' with a known area")

    def register(fn: F) -> F:
        expected = method_name_for(scenario_id)
        if fn.__name__ != expected:
            raise ValueError(f"scenario {scenario_id!r} must be a method named {expected}")
        if scenario_id in SCENARIOS:
            raise ValueError(f"duplicate scenario id {scenario_id!r}")
        SCENARIOS[scenario_id] = Scenario(scenario_id, statement, flags, expected)
        wrapped = _with_requirements(fn, flags)
        marked = pytest.mark.conformance(scenario_id)(wrapped)
        if inspect.iscoroutinefunction(fn):
            marked = pytest.mark.anyio(marked)
        return marked  # type: ignore[no-any-return]

    return register


def _with_requirements(fn: F, flags: tuple[str, ...]) -> F:
    if not flags:
        return fn
    from .requirements import REQUIREMENTS

    for flag in flags:
        if flag not in REQUIREMENTS:
            raise ValueError(f"unknown requirement {flag!r}")

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> None:
        harness = kwargs["harness"]
        missing = [f for f in flags if not harness.caps.supports(f)]
        if not missing:
            await fn(*args, **kwargs)
            return
        for flag in missing:
            await REQUIREMENTS[flag].verify_refusal(harness)
        notes = "; ".join(f"{f}=False: {REQUIREMENTS[f].when_false}" for f in missing)
        # The refusal was checked, so the test passes; reports count it as not applicable.
        harness.properties.append((OUTCOME_PROPERTY, NOT_APPLICABLE + notes))

    return run  # type: ignore[return-value]


def in_report_order(scenarios: dict[str, Scenario]) -> dict[str, Scenario]:
    """``scenarios`` sorted by area, in the order of :data:`AREAS` (stable within one)."""
    order = list(AREAS)
    return dict(sorted(scenarios.items(), key=lambda kv: order.index(kv[1].area)))
