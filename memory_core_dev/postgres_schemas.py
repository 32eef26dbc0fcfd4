"""Fresh PostgreSQL stores on the run's server: one schema each.

The server of ``postgres_server`` is shared by the whole run (and may be a
``PG_TEST_URL`` server someone else uses): a test that needs an empty store opens the
backend on a schema no one else uses, which the backend creates on connect.
"""

from __future__ import annotations

from uuid import uuid4

__all__ = ["new_schema", "schema_url", "with_schema"]


def new_schema(prefix: str = "t") -> str:
    """A schema name no one uses yet: ``<prefix>_<12 hex digits>`` (``prefix``: lower-case
    letters, digits and ``_``)."""
    return f"{prefix}_{uuid4().hex[:12]}"


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` (the backend's ``schema`` URL parameter)."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}schema={schema}"


def schema_url(url: str, prefix: str = "t") -> str:
    """``url`` naming a new schema (:func:`new_schema`): a fresh, empty store."""
    return with_schema(url, new_schema(prefix))
