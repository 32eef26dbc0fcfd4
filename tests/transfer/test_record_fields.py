"""Record checks name the field they refuse (``<kind>.<field>``), hold identifiers to the
target's limits, and quote a bad value at a readable length (found missing by mutation
testing of memory_core/transfer)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.archive import records
from memory_core.archive.records import FORMAT, check_record
from memory_core.capabilities import Capabilities
from memory_core.limits import Limits
from memory_core.transfer import ArchiveError
from tests.transfer.test_embedding_values import MESSAGE as EMBEDDED_MESSAGE

ENTITY = {
    "record": "entity",
    "id": "ent-1",
    "user_identifier": None,
    "name": "Ada",
    "type": "PERSON",
    "description": None,
    "created_at": None,
    "updated_at": None,
}
CONVERSATION = {
    "record": "conversation",
    "id": "1b6f0e2c-3a55-4a8e-9a77-1d2b3c4d5e6f",
    "session_id": "chat-1",
    "user_identifier": None,
    "title": "Trip",
    "metadata": {},
    "created_at": "2026-05-20T09:30:00.123457Z",
}
MENTION = {
    "record": "mention",
    "message_id": "0b6f0e2c-3a55-4a8e-9a77-1d2b3c4d5e6f",
    "entity_id": "ent-1",
    "position": 0,
}


@pytest.mark.parametrize(("record", "field"), [(ENTITY, "id"), (MENTION, "entity_id")])
def test_an_empty_entity_id_is_refused_naming_the_field(record: dict[str, Any], field: str) -> None:
    with pytest.raises(ArchiveError) as refused:
        check_record({**record, field: ""}, line=7)
    assert refused.value.line == 7
    assert refused.value.message.startswith(f"line 7: {record['record']}.{field}: ")


@pytest.mark.parametrize(("record", "field"), [(ENTITY, "id"), (MENTION, "entity_id")])
def test_an_entity_id_is_held_to_the_targets_identifier_limit(
    record: dict[str, Any], field: str
) -> None:
    small = Limits(max_identifier_bytes=8)
    assert check_record({**record, field: "x" * 8}, limits=small)[field] == "x" * 8
    with pytest.raises(ArchiveError, match=rf"{record['record']}\.{field}: "):
        check_record({**record, field: "x" * 9}, limits=small)
    assert check_record({**record, field: "x" * 9})[field] == "x" * 9  # the default limit


def test_a_long_bad_value_is_quoted_cut_short() -> None:
    header = records.header("memory", "memory://", Capabilities(), False, None, None)
    header["format"] = "y" * 10_000
    with pytest.raises(ArchiveError) as refused:
        check_record(header, line=1)
    quoted = "'" + "y" * 76 + "..."  # 80 characters in all
    assert refused.value.message == f"line 1: not a {FORMAT} (format {quoted})"


SMALL = Limits(max_identifier_bytes=8, max_content_chars=8)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (CONVERSATION, "session_id"),
        (CONVERSATION, "title"),
        (ENTITY, "name"),
        (ENTITY, "description"),
    ],
)
def test_each_text_field_is_held_to_the_targets_limit_naming_it(
    record: dict[str, Any], field: str
) -> None:
    assert check_record({**record, field: "x" * 8}, limits=SMALL)[field] == "x" * 8
    with pytest.raises(ArchiveError) as refused:
        check_record({**record, field: "x" * 9}, line=2, limits=SMALL)
    assert refused.value.message.startswith(f"line 2: {record['record']}.{field}: ")
    assert check_record({**record, field: "x" * 9})[field] == "x" * 9  # the default limits


@pytest.mark.parametrize(("record", "field"), [(CONVERSATION, "title"), (ENTITY, "name")])
def test_an_empty_title_or_name_is_refused(record: dict[str, Any], field: str) -> None:
    with pytest.raises(ArchiveError, match=rf"{record['record']}\.{field}: "):
        check_record({**record, field: ""})


def test_an_entity_type_is_stored_in_upper_case() -> None:
    checked = check_record({**ENTITY, "type": "person"})
    assert checked["type"] == "PERSON" and checked.keys() == ENTITY.keys()


MESSAGE = {**EMBEDDED_MESSAGE, "metadata": {"k": "v"}, "idempotency_key": "turn-1"}


@pytest.mark.parametrize("record", [CONVERSATION, MESSAGE, ENTITY, MENTION])
def test_a_checked_record_keeps_exactly_its_fields(record: dict[str, Any]) -> None:
    assert check_record(dict(record)) == record


@pytest.mark.parametrize(
    ("record", "field", "value", "limits"),
    [
        (CONVERSATION, "metadata", {"k": "x" * 20}, Limits(max_metadata_bytes=16)),
        (MESSAGE, "metadata", {"k": "x" * 20}, Limits(max_metadata_bytes=16)),
        (MESSAGE, "idempotency_key", "x" * 9, SMALL),
        (CONVERSATION, "user_identifier", "x" * 9, SMALL),
        (ENTITY, "user_identifier", "x" * 9, SMALL),
    ],
)
def test_other_fields_are_held_to_the_targets_limits_naming_them(
    record: dict[str, Any], field: str, value: Any, limits: Limits
) -> None:
    assert check_record({**record, field: value})[field] == value  # within the defaults
    with pytest.raises(ArchiveError) as refused:
        check_record({**record, field: value}, line=4, limits=limits)
    assert refused.value.message.startswith(f"line 4: {record['record']}.{field}: ")


def test_an_empty_idempotency_key_is_refused() -> None:
    with pytest.raises(ArchiveError, match=r"message\.idempotency_key: "):
        check_record({**MESSAGE, "idempotency_key": ""})
    assert check_record({**MESSAGE, "idempotency_key": None})["idempotency_key"] is None


def test_an_unknown_record_kind_is_an_archive_error() -> None:
    with pytest.raises(ArchiveError, match="unknown record kind 'bogus'"):
        check_record({**MESSAGE, "record": "bogus"})


def test_fields_after_a_missing_optional_one_are_still_checked() -> None:
    untitled = {k: v for k, v in CONVERSATION.items() if k != "title"}
    assert "title" not in check_record(dict(untitled))
    with pytest.raises(ArchiveError, match=r"conversation\.truncated has the wrong type"):
        check_record({**untitled, "truncated": "yes"})


def test_stamps_are_written_in_utc_whatever_the_offset() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    two_ahead = datetime(2026, 5, 20, 9, 30, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    assert records.stamp(two_ahead) == "2026-05-20T07:30:00.000005Z"
    naive = datetime(2026, 5, 20, 9, 30)  # taken as UTC
    assert records.stamp(naive) == "2026-05-20T09:30:00.000000Z"
    assert records.stamp(naive.replace(tzinfo=UTC)) == records.stamp(naive)
