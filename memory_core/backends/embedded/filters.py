"""Exact metadata filters for search, evaluated by a Python function registered in SQLite.

The rule itself is :mod:`memory_core.filters`, shared with every backend.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from memory_core.store import matches


def metadata_matches(metadata_text: str | None, filters_text: str | None) -> int:
    """The SQL function ``meta_match(messages.metadata, :filters_json)`` (1 or 0).

    Never raises: an exception inside a SQLite function would surface as a raw error.
    """
    try:
        metadata = json.loads(metadata_text or "{}")
        filters = _parse_filters(filters_text or "{}")
    except (TypeError, ValueError):
        return 0
    if not isinstance(metadata, dict) or not isinstance(filters, dict):
        return 0
    return int(matches(metadata, filters))


@lru_cache(maxsize=64)
def _parse_filters(text: str) -> Any:
    # The same filter text is evaluated once per candidate row: parse it once.
    return json.loads(text)
