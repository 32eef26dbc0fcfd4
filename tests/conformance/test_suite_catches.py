"""Scenarios that must fail (or turn n/a) on a backend that breaks their rule: each runs
the real suite, through :func:`memory_core.conformance.runner.run`, on a deliberately broken
embedded backend from :mod:`tests.conformance.broken_backends`."""

from __future__ import annotations

from memory_core import register_backend
from memory_core.conformance.report import FAILED, NOT_APPLICABLE, PASSED, RunReport
from memory_core.conformance.runner import run

BROKEN = "tests.conformance.broken_backends"
for _scheme, _cls in (
    ("cf-broken-embedder", "IgnoresEmbedder"),
    ("cf-broken-since", "IgnoresSince"),
    ("cf-keeps-entities", "KeepsEntities"),
):
    register_backend(_scheme, f"{BROKEN}:{_cls}")

ENTITY_SCENARIOS = {
    "entities.add_and_find",
    "entities.add_is_idempotent",
    "entities.find_limit_and_type",
    "entities.mention_by_id",
    "entities.mention_typed",
    "entities.mention_name_only",
    "entities.extractor",
    "tenancy.entities_isolated",
    "tenancy.mentions_isolated",
}


def _result(report: RunReport, scenario_id: str) -> tuple[str | None, str]:
    found = [r for r in report.results if r.id == scenario_id]
    return (found[0].outcome, found[0].message) if found else (None, "")


def test_search_vector_fails_when_the_embedder_is_ignored() -> None:
    [broken] = run(["cf-broken-embedder://"], keyword="search_vector")
    assert _result(broken, "search.vector")[0] == FAILED, broken.to_text()
    [honest] = run(["memory://"], keyword="search_vector")
    assert _result(honest, "search.vector")[0] == PASSED, honest.to_text()


def test_a_store_that_claims_server_side_since_and_ignores_it_fails() -> None:
    [broken] = run(["cf-broken-since://"], keyword="since_server_side")
    outcome, message = _result(broken, "since.server_side")
    assert outcome == FAILED, broken.to_text()
    assert "early" in message and "late" in message, message


def test_entity_scenarios_are_na_where_entities_cannot_be_deleted() -> None:
    [shared] = run(["cf-keeps-entities://"], keyword="entities or tenancy")
    for scenario_id in ENTITY_SCENARIOS:
        outcome, message = _result(shared, scenario_id)
        assert outcome == NOT_APPLICABLE, f"{scenario_id}: {outcome} {message}"
        assert "--throwaway-store" in message, message
    assert _result(shared, "entities.delete")[0] == NOT_APPLICABLE  # refusal verified
    assert shared.ok, shared.to_text()
    [throwaway] = run(["cf-keeps-entities://"], throwaway=True, keyword="entities or tenancy")
    for scenario_id in ENTITY_SCENARIOS:
        assert _result(throwaway, scenario_id)[0] == PASSED, throwaway.to_text()
