"""The portability area passes where a backend differs from the embedded reference but
declares and announces it: the catalogue's
:class:`~tests.conformance.catalogue.NoMetadataDeclared`. (Its silent counterparts,
``IgnoresLimit`` and ``LosesMetadata``, fail it in :mod:`tests.conformance.test_catalogue`.)"""

from __future__ import annotations

from memory_core.conformance.report import PASSED
from memory_core.conformance.runner import run

from .catalogue import NoMetadataDeclared, case_for, register

register()


def test_declared_and_announced_differences_pass() -> None:
    case = case_for(NoMetadataDeclared)
    assert not case.failing
    [declared] = run([case.url], throwaway=case.throwaway, keyword=case.run_keyword)
    assert {r.outcome for r in declared.results} == {PASSED}, declared.to_text()
