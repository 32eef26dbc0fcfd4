"""Fixtures every area class shares (the fsspec-style abstract mixin)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

import pytest

from ..fault_control import FaultControl, load_fault_control
from ..harness import Harness
from ..seeding import Seed

USAGE = (
    "no backend URL for the conformance suite: set backend_url on the class, override the "
    "conformance_backend_url fixture, or run pytest -p memory_core.conformance.plugin "
    "--pyargs memory_core.conformance --backend-url URL"
)


class SuiteBase:
    """Where the backend under test comes from.

    Set ``backend_url`` (and ``backend_options``) on a subclass, or override the
    ``conformance_backend_url`` / ``conformance_backend_options`` fixtures. With neither,
    the URLs come from ``--backend-url`` (the pytest plugin parametrizes over them).
    ``throwaway_store = True`` (or ``--throwaway-store``) lets scenarios that need an
    empty store wipe it. Override ``conformance_faults`` to run the ``faults`` area (a
    network backend whose service has fault knobs: see
    :class:`~memory_core.conformance.fault_control.FaultControl`).
    """

    backend_url: ClassVar[str | None] = None
    backend_options: ClassVar[Mapping[str, Any]] = {}
    throwaway_store: ClassVar[bool] = False

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def conformance_cli_url(self) -> str:
        # Replaced by direct parametrization in memory_core.conformance.plugin; reaching this body
        # means the plugin is not loaded and no URL was configured.
        raise pytest.UsageError(USAGE)

    @pytest.fixture
    def conformance_backend_url(self, conformance_cli_url: str) -> str:
        """The URL of the backend under test."""
        return conformance_cli_url

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        """Options passed to ``open_backend`` with the URL."""
        return dict(self.backend_options)

    @pytest.fixture
    def conformance_faults(
        self, conformance_backend_url: str, request: pytest.FixtureRequest
    ) -> FaultControl | None:
        """The fault knobs of the backend's service: from ``--fault-control
        MODULE:FACTORY`` (called with the backend URL) when given, else ``None``, which
        leaves the ``faults`` area not applicable."""
        spec = request.config.getoption("conformance_fault_control", default=None)
        return None if spec is None else load_fault_control(spec, conformance_backend_url)

    @pytest.fixture
    def conformance_seed(self) -> Seed | None:
        """What writes relationships a backend reads but cannot write (see
        :mod:`~memory_core.conformance.seeding`); ``None`` by default, which leaves the
        scenarios needing it not applicable on such a backend."""
        return None

    @pytest.fixture
    def conformance_throwaway(self, request: pytest.FixtureRequest) -> bool:
        """True when scenarios may wipe the store."""
        flag = request.config.getoption("conformance_throwaway", default=False)
        return bool(self.throwaway_store or flag)

    @pytest.fixture
    async def harness(
        self,
        conformance_backend_url: str,
        conformance_backend_options: dict[str, Any],
        conformance_throwaway: bool,
        conformance_seed: Seed | None,
        request: pytest.FixtureRequest,
    ) -> AsyncIterator[Harness]:
        """The backend under test, opened fresh for the scenario and cleaned up after."""
        async with Harness(
            conformance_backend_url, conformance_backend_options, throwaway=conformance_throwaway
        ) as harness:
            harness.properties = request.node.user_properties
            harness.seed = conformance_seed
            yield harness
