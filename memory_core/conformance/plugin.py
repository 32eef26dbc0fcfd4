"""pytest plugin of the conformance suite. Opt-in: installing memory-core registers no
plugin; load it with ``-p memory_core.conformance.plugin`` or, in a ``conftest.py``,
``pytest_plugins = ["memory_core.conformance.plugin"]``.

Usage for a third-party backend registered under a URL scheme::

    pytest -p memory_core.conformance.plugin --pyargs memory_core.conformance --backend-url URL

It only acts on tests of :class:`conformance.ConformanceSuite` subclasses: it adds the
``--backend-url`` and ``--throwaway-store`` options and parametrizes the suite over the
URLs. In any other pytest run it does nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.settings import redact_url

# Better assertion messages in the suite's helper modules (they are not test_*.py files).
pytest.register_assert_rewrite(
    "memory_core.conformance.suite",
    "memory_core.conformance.checks",
    "memory_core.conformance.requirements",
    "memory_core.conformance.harness",
)

PARAM = "conformance_cli_url"
MISSING_URL_MARK = "conformance_missing_url"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "memory-core conformance suite")
    group.addoption(
        "--backend-url",
        action="append",
        dest="conformance_urls",
        default=[],
        metavar="URL",
        help="run the conformance suite against this backend URL (repeatable)",
    )
    group.addoption(
        "--throwaway-store",
        action="store_true",
        dest="conformance_throwaway",
        default=False,
        help="the store may be wiped (enables scenarios that need an empty store)",
    )
    group.addoption(
        "--fault-control",
        dest="conformance_fault_control",
        default=None,
        metavar="MODULE:FACTORY",
        help="run the faults area: FACTORY(backend_url) returns the FaultControl of the "
        "backend's service (the project's server: "
        "memory_core.conformance.fault_control:AdminFaults, key from MEMORY_API_KEY)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance(id): a conformance-suite scenario")
    config.addinivalue_line("markers", f"{MISSING_URL_MARK}: no --backend-url was given")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if PARAM not in metafunc.fixturenames:
        return
    class_url = getattr(metafunc.cls, "backend_url", None)
    urls: list[Any] = [class_url] if class_url else list(metafunc.config.option.conformance_urls)
    if not urls:
        urls = [pytest.param(None, marks=pytest.mark.conformance_missing_url)]
    metafunc.parametrize(PARAM, urls, ids=[_url_id(u) for u in urls])


def _url_id(url: Any) -> str:
    return "no-url" if not isinstance(url, str) else redact_url(url)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker(MISSING_URL_MARK) for item in items):
        raise pytest.UsageError(
            "conformance: no backend URL given. Usage: "
            "pytest -p memory_core.conformance.plugin --pyargs memory_core.conformance "
            "--backend-url URL [--backend-url URL ...]"
        )
