"""The agent-memory TCK (the field's public conformance kit) run against memory-core.

:mod:`.adapter` maps the TCK's ``BaseAdapter`` onto memory-core's public API;
:mod:`.plugin` is the pytest plugin that replaces the kit's own conftest files (it needs
pytest-asyncio and a reference Neo4j; this one runs on anyio against any memory-core URL);
``python -m memory_core_dev.tck`` runs the kit's tests and its compliance report
(:mod:`.__main__`). The kit is not on PyPI: it is found by :func:`.location.find`.
"""
