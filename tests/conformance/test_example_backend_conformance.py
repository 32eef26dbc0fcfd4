"""The README example: the suite on a new backend with a two-line class."""

from __future__ import annotations

from memory_core.conformance import ConformanceSuite

from .catalogue import register

register()  # toy://


class TestToyConformance(ConformanceSuite):
    backend_url = "toy://"
    throwaway_store = True  # every toy:// instance is a private in-memory store
