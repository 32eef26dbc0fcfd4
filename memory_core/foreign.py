"""Reading records another program wrote into a shared store (Bolt, PostgreSQL).

A store shared with other writers (the reference library, a migration script, a DBA) may
hold values memory-core's models cannot hold. One record like that must never break a
listing or a read of other records, so each value has one rule (docs/using.md, "Records
another program wrote"), and each use of a rule issues a
:class:`~memory_core.ForeignDataWarning` naming the record, the value and the rule:

* a time outside Python's ``datetime`` range (before year 1, after 9999, PostgreSQL's
  ``±infinity``) is returned as the nearest time Python has (:data:`EARLIEST`,
  :data:`LATEST`), so orders stay right;
* content that is not text is returned as its JSON text;
* metadata that is not a JSON object is returned as ``{}``;
* exact content bytes (PostgreSQL's ``content_exact``) that are not UTF-8: the content is
  returned from the text column;
* a record whose id is not a UUID, or a message whose role is none of memory-core's, is
  left out (of a listing, a read of a conversation, a search, an export).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from .warning_channel import warn_foreign

EARLIEST = datetime.min.replace(tzinfo=UTC)
"""What a stored time before Python's range reads as."""
LATEST = datetime.max.replace(tzinfo=UTC)
"""What a stored time after Python's range reads as."""

_SHOWN = 80
"""Characters of a stored value or id a warning shows."""


def civil(micros: int) -> tuple[int, int, int, int, int, int, int]:
    """Microseconds since 1970-01-01 UTC as (year, month, day, hour, minute, second,
    microsecond) of the proleptic Gregorian calendar, for any year (0 is 1 BC, -1 is 2 BC,
    as ISO 8601 and Cypher count them; Python's datetime stops at 1 and 9999)."""
    days, rest = divmod(micros, 86_400_000_000)
    # Eras of 400 years (146,097 days) starting on 0000-03-01.
    era, day_of_era = divmod(days + 719_468, 146_097)
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153  # 0 is March
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    year = year_of_era + era * 400 + (month <= 2)
    seconds, micro = divmod(rest, 1_000_000)
    return year, month, day, seconds // 3600, seconds // 60 % 60, seconds % 60, micro


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text[:_SHOWN] + ("…" if len(text) > _SHOWN else ""))


def _warn(backend: str, kind: str, record: Any, what: str) -> None:
    warn_foreign(f"{backend}: another program's {kind} {_shown(str(record))} {what}")


def out_of_range(
    backend: str, kind: str, record: Any, field: str, stored: Any, *, late: bool
) -> datetime:
    """The instant a stored time outside Python's range reads as (``late``: after it)."""
    instant = LATEST if late else EARLIEST
    _warn(
        backend,
        kind,
        record,
        f"has {field} {_shown(stored)}, outside Python's datetime range: read as "
        f"{instant.isoformat()}",
    )
    return instant


def not_text(backend: str, kind: str, record: Any, field: str, stored: Any) -> str:
    """Content stored as something other than text, as the JSON text of what is stored."""
    text = json.dumps(stored, ensure_ascii=False, default=str)
    _warn(
        backend,
        kind,
        record,
        f"has {field} that is not text ({type(stored).__name__}): read as its JSON text",
    )
    return text


def not_an_object(backend: str, kind: str, record: Any, stored: Any) -> dict[str, Any]:
    """Metadata stored as something other than a JSON object, read as ``{}``."""
    _warn(
        backend,
        kind,
        record,
        f"has metadata {_shown(stored)} that is not a JSON object: read as {{}}",
    )
    return {}


def not_utf8(backend: str, kind: str, record: Any, field: str, text: str) -> str:
    """Exact content bytes that do not decode: the content's text column instead."""
    _warn(backend, kind, record, f"has {field} that is not UTF-8: read from its text column")
    return text


def left_out(backend: str, kind: str, record: Any, why: str) -> None:
    """Say that a record was left out of what a call returns, and why."""
    _warn(backend, kind, record, f"{why}: left out")
