"""The whole conformance suite on the embedded backend over one SQLite file.

One file is shared by every scenario of the class and is NOT declared throwaway, so the
run also proves the suite is safe on a store it does not own (scenarios that need an
empty store get a fresh tenant).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.conformance import ConformanceSuite


class TestSqliteConformance(ConformanceSuite):
    @pytest.fixture(scope="class")
    @classmethod
    def conformance_backend_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        path: Path = tmp_path_factory.mktemp("conformance") / "store.db"
        return f"sqlite:///{path}"
