"""Hypothesis strategies for hostile arguments: arbitrary unicode (lone surrogates and
control characters included), every JSON type at any depth, integers of any size,
datetimes at the extremes with odd offsets, malformed ids and injection strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any
from uuid import UUID

from hypothesis import strategies as st

INJECTIONS = [
    "' OR 1=1 --",
    "'); DROP TABLE messages; --",
    '"}) MATCH (n) DETACH DELETE n //',
    "$tenant",
    "{{7*7}}",
    "%0D%0AHTTP/1.1 200 OK",
    "\r\nX-Injected: 1",
    "\x1b[2J\x1b[31mred",
    "../../etc/passwd",
    "%2e%2e%2f",
    "\x00",
    "a\u2028b\u202eevil",
    "*",
    "%",
    "_",
    "\\",
    "' | ' + $x",
    "${jndi:ldap://127.0.0.1/a}",
    "<script>alert(1)</script>",
]

any_char = st.characters(exclude_categories=())  # surrogates too
any_text = st.one_of(
    st.text(max_size=30),
    st.text(any_char, max_size=30),
    st.sampled_from(INJECTIONS),
    st.text(st.sampled_from("\x00\n\r\t\x1b\x7f\x85 é😀\u200d"), max_size=8),
)
any_int = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63) - 1]),
    st.sampled_from([4299, 4301, -5000]).map(lambda e: 10 ** abs(e) * (1 if e > 0 else -1)),
)


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"d": value}
    return value


json_leaf = st.one_of(st.none(), st.booleans(), any_int, st.floats(), any_text)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(any_text, children, max_size=4),
        st.dictionaries(any_text, children, max_size=2).map(MappingProxyType),
    ),
    max_leaves=12,
)
not_json = st.sampled_from([object(), b"bytes", {1, 2}, datetime(2020, 1, 1), UUID(int=1)])
metadata = st.one_of(
    st.none(),
    st.dictionaries(any_text, json_value, max_size=4),
    st.integers(0, 1200).map(_deep),
    st.dictionaries(st.integers(), json_leaf, min_size=1, max_size=2),
    st.builds(lambda v: {"x": v}, not_json),
    st.integers(60_000, 70_000).map(lambda n: {"big": "x" * n}),
    json_value,
    not_json,
)

offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
datetimes = st.one_of(
    st.datetimes(),
    st.builds(lambda d, tz: d.replace(tzinfo=tz), st.datetimes(), offsets),
    st.builds(lambda tz: datetime.max.replace(tzinfo=tz), offsets),
    st.builds(lambda tz: datetime.min.replace(tzinfo=tz), offsets),
    st.sampled_from([datetime.min, datetime.max, datetime(1970, 1, 1, tzinfo=UTC)]),
    st.sampled_from(["2024-02-30", "9999-12-31T23:59:59-14:00", "yesterday", ""]),
    st.integers(),
)
ids = st.one_of(
    st.uuids(),
    st.uuids().map(str),
    st.uuids(version=5),
    st.sampled_from(["not-a-uuid", "", "00000000-0000-0000-0000-00000000000g", "{}"]),
    any_text,
    st.integers(),
    st.none(),
    st.binary(max_size=4),
)
limits = st.integers(0, 3).flatmap(
    lambda i: (
        st.integers(1, 50)
        if i
        else st.one_of(st.integers(-2, 0), any_int, st.none(), st.floats(), st.text(max_size=3))
    )
)
roles = st.one_of(
    st.sampled_from(["user", "assistant", "system", "tool", "USER", "robot", ""]), any_text
)
entity_types = st.one_of(st.sampled_from(["PERSON", "object", "Event", "thing"]), any_text)


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """``valid`` about three times in four, else ``hostile``: most calls get far enough
    to write, and the rest probe every check."""
    return st.integers(0, 3).flatmap(lambda i: hostile if i == 0 else valid)


plain_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), max_size=40)
good_metadata = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers() | plain_text,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
        max_leaves=6,
    ),
    max_size=3,
)
