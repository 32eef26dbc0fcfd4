"""The whole conformance suite on the embedded backend, in memory (``memory://``).

Every ``memory://`` instance is a private store, so it may be declared throwaway.
"""

from __future__ import annotations

from memory_core.conformance import ConformanceSuite


class TestMemoryConformance(ConformanceSuite):
    backend_url = "memory://"
    throwaway_store = True
