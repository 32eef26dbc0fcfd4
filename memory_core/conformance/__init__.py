"""The memory-core conformance suite: one set of scenarios, runnable against any backend URL.

Reuse it in a test module with a two-line class (fsspec-style mixin)::

    from memory_core.conformance import ConformanceSuite

    class TestMyBackend(ConformanceSuite):
        backend_url = "myscheme://..."

or override the ``conformance_backend_url`` fixture (and ``conformance_backend_options``)
when the URL comes from another fixture. The pytest plugin is opt-in: add
``pytest_plugins = ["memory_core.conformance.plugin"]`` to a ``conftest.py``.
Without code: ``memory-core conformance myscheme://...``, or
``pytest -p memory_core.conformance.plugin --pyargs memory_core.conformance
--backend-url myscheme://...``. See ``memory_core/conformance/README.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .harness import Harness
    from .requirements import REQUIREMENTS
    from .scenarios import SCENARIOS, scenario
    from .suite import ConformanceSuite

__all__ = ["REQUIREMENTS", "SCENARIOS", "ConformanceSuite", "Harness", "scenario"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import memory_core.conformance.runner` works (and explains) without pytest.
    if name == "ConformanceSuite":
        from .suite import ConformanceSuite

        return ConformanceSuite
    if name == "Harness":
        from .harness import Harness

        return Harness
    if name in ("SCENARIOS", "scenario"):
        from . import scenarios

        return getattr(scenarios, name)
    if name == "REQUIREMENTS":
        from .requirements import REQUIREMENTS

        return REQUIREMENTS
    raise AttributeError(f"module 'conformance' has no attribute {name!r}")
