"""The one rule for ``metadata_filters``, shared by every backend that applies them.

A filter ``{key: value}`` keeps a message when its top-level metadata has ``key`` and the
stored value equals ``value`` *with JSON types respected*: ``True`` never equals ``1``,
``1`` never equals ``"1"``, ``None`` matches only a stored ``null`` (not a missing key).
Numbers compare by value (``1 == 1.0``: JSON does not tell them apart). Lists compare
element-wise in order; dicts by their keys and values, whatever the key order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def same_value(stored: Any, wanted: Any) -> bool:
    """JSON-type-exact equality (see the module docstring)."""
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return isinstance(wanted, bool) and isinstance(stored, bool) and stored is wanted
    if isinstance(wanted, int | float):
        return isinstance(stored, int | float) and stored == wanted
    if isinstance(wanted, list | tuple):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(same_value(s, w) for s, w in zip(stored, wanted, strict=True))
        )
    if isinstance(wanted, Mapping):
        return (
            isinstance(stored, dict)
            and stored.keys() == wanted.keys()
            and all(same_value(stored[k], wanted[k]) for k in wanted)
        )
    if wanted is None:
        return stored is None
    return type(stored) is type(wanted) and bool(stored == wanted)


def matches(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """True when every filter key is present in ``metadata`` with an equal value."""
    return all(key in metadata and same_value(metadata[key], want) for key, want in filters.items())
