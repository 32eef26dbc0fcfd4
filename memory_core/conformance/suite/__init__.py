"""The suite as importable test classes, one per area, and :class:`ConformanceSuite`
which combines them all."""

from __future__ import annotations

from ..scenarios import SCENARIOS, Scenario, in_report_order
from .aliasing import AliasingSuite
from .base import SuiteBase
from .clear import ClearSuite
from .context import ContextSuite
from .conversations import ConversationsSuite
from .delete import DeleteSuite
from .entities import EntitiesSuite
from .entity_updates import EntityUpdatesSuite
from .erasure import ErasureSuite
from .errors import ErrorsSuite
from .faults import FaultsSuite
from .fidelity import FidelitySuite
from .guards import GuardsSuite
from .idempotency import IdempotencySuite
from .limits import LimitsSuite
from .long_term import (
    EntitySearchSuite,
    FactsSuite,
    LongTermContextSuite,
    LongTermErasureSuite,
    LongTermTenancySuite,
    PreferencesSuite,
    RelationshipsSuite,
)
from .nams import NamsSuite
from .portability import PortabilitySuite
from .reads import ReadsSuite
from .reasoning import SimilarTracesSuite, ToolStatsSuite, TracesSuite
from .runtime import RuntimeSuite
from .search import SearchSuite
from .sessions import SessionsSuite
from .since import SinceSuite
from .stats import StatsSuite
from .summary import SummarySuite
from .tenancy import TenancySuite
from .writes import WritesSuite

AREA_SUITES = (
    WritesSuite,
    ReadsSuite,
    LimitsSuite,
    SinceSuite,
    FidelitySuite,
    IdempotencySuite,
    DeleteSuite,
    ClearSuite,
    SessionsSuite,
    ConversationsSuite,
    SearchSuite,
    ContextSuite,
    SummarySuite,
    TenancySuite,
    EntitiesSuite,
    EntitySearchSuite,
    EntityUpdatesSuite,
    PreferencesSuite,
    FactsSuite,
    RelationshipsSuite,
    TracesSuite,
    ToolStatsSuite,
    SimilarTracesSuite,
    NamsSuite,
    ErrorsSuite,
    AliasingSuite,
    RuntimeSuite,
    FaultsSuite,
    PortabilitySuite,
    GuardsSuite,
    ErasureSuite,
    LongTermErasureSuite,
    LongTermContextSuite,
    LongTermTenancySuite,
    StatsSuite,
)


class ConformanceSuite(*AREA_SUITES):  # type: ignore[misc]
    """Every scenario of every area. Subclass it as ``Test…`` with ``backend_url`` set
    (or the ``conformance_backend_url`` fixture overridden) to run it."""


def all_scenarios() -> dict[str, Scenario]:
    """Every scenario of the suite (importing this package registered them all), in report
    order."""
    return in_report_order(SCENARIOS)


__all__ = [
    "AREA_SUITES",
    "ConformanceSuite",
    "SuiteBase",
    "all_scenarios",
    *[s.__name__ for s in AREA_SUITES],
]
