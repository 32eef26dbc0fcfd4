"""Argument checks shared by every backend.

Each check raises :class:`~memory_core.errors.InvalidRequestError` (or its ``TypeError``
subclass) naming the argument. The contract runs them before any write, so bad input
writes nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import ValidationError as PydanticValidationError

from .errors import InvalidArgumentTypeError, InvalidRequestError
from .limits import DEFAULT_LIMITS, Limits
from .models import EntityRef, EntityType, MessageRole
from .summary import MAX_NEIGHBOURS

ORDER_FIELDS = ("updated_at", "created_at", "message_count", "session_id")
MAX_INT = 2**63 - 1  # the largest limit/offset every store (Neo4j's 64-bit ints) can take
# C0, DEL and C1 control characters: never part of a session id or user identifier.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# A dict lookup: calling the enum costs more than the rest of a batch message's checks.
_ROLES: dict[str, MessageRole] = {role.value: role for role in MessageRole}


def _check_encodable(value: str, argument: str) -> None:
    # A lone surrogate ("\ud800") is a valid Python str but not UTF-8: no store can keep it.
    if not _encodable(value):
        raise InvalidRequestError(
            "contains a character that is not valid Unicode text (a lone surrogate)",
            argument=argument,
        )


_SIMPLE_MESSAGE_KEYS = frozenset({"role", "content"})


def simple_message(raw: Any, max_chars: int | None) -> tuple[MessageRole, str] | None:
    """The role and content of a batch message that is a plain dict of only a known role
    and text within ``max_chars``: what the named checks would return, without building
    a name per message (a batch of ten thousand spent most of its checking time there).
    ``None`` for anything else, which the named checks then decide."""
    if type(raw) is not dict or not _SIMPLE_MESSAGE_KEYS.issuperset(raw):
        return None
    role, content = raw.get("role"), raw.get("content")
    if type(content) is not str or (max_chars is not None and len(content) > max_chars):
        return None
    found = role if type(role) is MessageRole else _ROLES.get(role) if type(role) is str else None
    if found is None or not (content.isascii() or _encodable(content)):
        return None
    return found, content


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_str(
    value: Any, argument: str, *, allow_empty: bool = True, max_chars: int | None = None
) -> str:
    """A ``str`` (not bytes, not None), at most ``max_chars`` characters when given."""
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"must be a str, got {type(value).__name__}", argument=argument
        )
    if max_chars is not None and len(value) > max_chars:
        raise InvalidRequestError(
            f"must be at most {max_chars} characters, got {len(value)}", argument=argument
        )
    if not allow_empty and not value.strip():
        raise InvalidRequestError("must not be empty", argument=argument)
    _check_encodable(value, argument)
    return str(value)


def check_utf8_bytes(text: str, argument: str, cap: int) -> str:
    """``text`` (already checked by :func:`check_str`) if it is at most ``cap`` bytes of
    UTF-8: a multi-byte character counts for its bytes, not as one."""
    if len(text) > cap or (len(text) * 4 > cap and len(text.encode("utf-8")) > cap):
        raise InvalidRequestError(f"must be at most {cap} bytes of UTF-8", argument=argument)
    return text


def check_identifier(
    value: Any, argument: str, limits: Limits = DEFAULT_LIMITS, *, plain: bool = False
) -> str:
    """A non-empty ``str`` of at most ``limits.max_identifier_bytes`` bytes of UTF-8.

    ``plain`` also refuses control characters (NUL, newlines, escapes): session ids and
    user identifiers name tenants and conversations, and must never be ambiguous.
    """
    text = check_utf8_bytes(
        check_str(value, argument, allow_empty=False), argument, limits.max_identifier_bytes
    )
    if plain and _CONTROL.search(text):
        raise InvalidRequestError(
            "must not contain control characters (NUL, newline, escape ...)", argument=argument
        )
    return text


MAX_LINKED_ENTITIES = 100
"""Most entity ids one preference links."""
RELATION_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")
"""A relationship type: a letter, then letters, digits and underscores, 100 at most."""
MAX_ALIASES = 100
"""Most aliases one entity has."""


def check_aliases(value: Any, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """Other names of an entity: a list (not a ``str``) of at most :data:`MAX_ALIASES`
    identifiers, each kept once ignoring case (``str.casefold``; the first spelling
    wins). Errors name ``aliases``."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a list of names, got {type(value).__name__}", argument="aliases"
        )
    if len(value) > MAX_ALIASES:
        raise InvalidRequestError(
            f"must hold at most {MAX_ALIASES} names, got {len(value)}", argument="aliases"
        )
    names: dict[str, str] = {}
    for item in value:
        name = check_identifier(item, "aliases", limits)
        names.setdefault(name.casefold(), name)
    return list(names.values())


def check_optional_identifier(
    value: Any, argument: str, limits: Limits = DEFAULT_LIMITS, *, plain: bool = False
) -> str | None:
    """``None``, or an identifier as :func:`check_identifier` accepts it."""
    return None if value is None else check_identifier(value, argument, limits, plain=plain)


def check_optional_str(value: Any, argument: str) -> str | None:
    """``None`` or a non-empty ``str``."""
    return None if value is None else check_str(value, argument, allow_empty=False)


def check_uuid(value: Any, argument: str) -> UUID:
    """A ``UUID`` or a string that parses as one."""
    if isinstance(value, UUID):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"must be a UUID or str, got {type(value).__name__}", argument=argument
        )
    try:
        return UUID(value)
    except ValueError:
        raise InvalidRequestError(f"{value!r} is not a UUID", argument=argument) from None


def parse_uuid(value: Any) -> UUID | None:
    """The UUID ``value`` names, or ``None`` when it is not one (no error)."""
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            return None
    return None


def check_int(value: Any, argument: str, *, minimum: int) -> int:
    """A real ``int`` (not bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"must be an int, got {type(value).__name__}", argument=argument
        )
    if value < minimum:
        raise InvalidRequestError(f"must be >= {minimum}, got {_show(value)}", argument=argument)
    if value > MAX_INT:
        raise InvalidRequestError(f"must be <= {MAX_INT}, got {_show(value)}", argument=argument)
    return int(value)


def _show(value: int) -> str:
    # An int of thousands of digits cannot even be turned into text (Python's limit).
    return str(value) if value.bit_length() <= 256 else f"an integer of {value.bit_length()} bits"


def check_limit(value: Any, argument: str = "limit") -> int:
    """A positive ``int``."""
    return check_int(value, argument, minimum=1)


def check_half_life(value: Any) -> timedelta | None:
    """``recency_half_life``: ``None`` or a positive ``timedelta``."""
    if value is None:
        return None
    if not isinstance(value, timedelta):
        raise InvalidArgumentTypeError(
            f"must be a datetime.timedelta, got {type(value).__name__}",
            argument="recency_half_life",
        )
    if value <= timedelta(0):
        raise InvalidRequestError(f"must be positive, got {value}", argument="recency_half_life")
    return value


def check_neighbours(value: Any) -> int:
    """``get_context``'s ``neighbours``: an ``int`` from 0 to
    :data:`~memory_core.summary.MAX_NEIGHBOURS`."""
    count = check_int(value, "neighbours", minimum=0)
    if count > MAX_NEIGHBOURS:
        raise InvalidRequestError(
            f"must be <= {MAX_NEIGHBOURS}, got {_show(count)}", argument="neighbours"
        )
    return count


def check_bool(value: Any, argument: str) -> bool:
    """A real ``bool``."""
    if not isinstance(value, bool):
        raise InvalidArgumentTypeError(
            f"must be a bool, got {type(value).__name__}", argument=argument
        )
    return value


def check_role(value: Any, argument: str = "role") -> MessageRole:
    """One of user, assistant, system, tool (a ``MessageRole`` or its string)."""
    if isinstance(value, MessageRole):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"must be a MessageRole or str, got {type(value).__name__}", argument=argument
        )
    role = _ROLES.get(value) or _ROLES.get(value.lower())
    if role is None:
        allowed = ", ".join(r.value for r in MessageRole)
        raise InvalidRequestError(
            f"{value!r} is not a role (allowed: {allowed})", argument=argument
        )
    return role


def check_metadata(
    value: Any, argument: str = "metadata", limits: Limits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """``None`` → ``{}``; otherwise a dict with str keys that JSON can carry exactly, at
    most ``limits.max_metadata_depth`` levels deep and ``limits.max_metadata_bytes`` bytes
    as compact JSON. Returned as plain dicts and lists (any ``Mapping`` becomes a dict,
    a tuple a list)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(
            f"must be a dict, got {type(value).__name__}", argument=argument
        )
    plain = check_json_value(value, argument, limits)
    assert isinstance(plain, dict)
    return plain


def check_json_value(value: Any, argument: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Any value JSON carries exactly (``None``, bool, number, str, list, dict), within
    the metadata limits (depth and bytes as compact JSON); returned as plain JSON types."""
    try:
        plain = _plain_json(value, argument, limits.max_metadata_depth, 1)
    except RecursionError:
        raise InvalidRequestError("is nested too deeply", argument=argument) from None
    try:
        text = json.dumps(plain, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        # An integer too long to write as text (Python's int/str conversion limit).
        raise InvalidRequestError(
            "holds an integer too large to store", argument=argument
        ) from None
    cap = limits.max_metadata_bytes
    if len(text) > cap or len(text.encode("utf-8")) > cap:
        raise InvalidRequestError(f"must be at most {cap} bytes as JSON", argument=argument)
    return plain


def _plain_json(value: Any, argument: str, max_depth: int, depth: int) -> Any:
    """``value`` as plain JSON types; containers deeper than ``max_depth`` are refused
    before they are walked, so the walk never recurses further than the limit."""
    if isinstance(value, Mapping | list | tuple) and depth > max_depth:
        raise InvalidRequestError(f"must be at most {max_depth} levels deep", argument=argument)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidRequestError(
                    f"keys must be str, got {type(key).__name__}", argument=argument
                )
            _check_encodable(key, argument)
            out[str(key)] = _plain_json(item, argument, max_depth, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_plain_json(item, argument, max_depth, depth + 1) for item in value]
    if isinstance(value, str):
        _check_encodable(value, argument)
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidRequestError("NaN and infinity cannot be stored", argument=argument)
        return float(value)
    raise InvalidRequestError(
        f"{type(value).__name__} values are not JSON (use str, int, float, bool, None, list, dict)",
        argument=argument,
    )


def check_datetime(value: Any, argument: str) -> datetime:
    """A ``datetime`` (naive means UTC) or an ISO-8601 string; returned aware, in UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidRequestError(
                f"{value!r} is not an ISO-8601 timestamp", argument=argument
            ) from None
    if not isinstance(value, datetime):
        raise InvalidArgumentTypeError(
            f"must be a datetime, got {type(value).__name__}", argument=argument
        )
    try:
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        # e.g. datetime.max with a negative UTC offset: not a representable UTC instant
        raise InvalidRequestError(
            "is out of range once converted to UTC", argument=argument
        ) from None


def check_threshold(value: Any, argument: str = "threshold") -> float | None:
    """``None`` or a number in 0..1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentTypeError(
            f"must be a number, got {type(value).__name__}", argument=argument
        )
    if not 0 <= value <= 1:  # compared as is: float() of a huge int overflows
        shown = _show(value) if isinstance(value, int) else repr(value)
        raise InvalidRequestError(f"must be within 0..1, got {shown}", argument=argument)
    return float(value)


def check_entity_type(value: Any, argument: str = "type") -> str:
    """A POLE+O type (any case) → its upper-case name."""
    text = check_str(value, argument, allow_empty=False)
    try:
        return EntityType(text.upper()).value
    except ValueError:
        allowed = ", ".join(t.value for t in EntityType)
        raise InvalidRequestError(
            f"{value!r} is not an entity type (allowed: {allowed})", argument=argument
        ) from None


def check_entity_refs(
    value: Any, argument: str = "explicit_mentions", limits: Limits = DEFAULT_LIMITS
) -> list[EntityRef]:
    """A list of at most ``limits.max_mentions`` ``EntityRef`` (or dicts / bare names);
    each must carry an id or a name. The count is checked before any item is."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidArgumentTypeError(
            f"must be a list, got {type(value).__name__}", argument=argument
        )
    if len(value) > limits.max_mentions:
        raise InvalidRequestError(
            f"must hold at most {limits.max_mentions} mentions, got {len(value)}",
            argument=argument,
        )
    refs: list[EntityRef] = []
    for item in value:
        if isinstance(item, EntityRef):
            ref = item
        elif isinstance(item, str):
            ref = EntityRef(name=item)
        elif isinstance(item, Mapping):
            try:
                ref = EntityRef.model_validate(dict(item))
            except PydanticValidationError:
                raise InvalidRequestError(
                    "each dict needs str 'id', 'name' or 'type' only", argument=argument
                ) from None
        else:
            raise InvalidArgumentTypeError(
                f"items must be EntityRef, dict or str, got {type(item).__name__}",
                argument=argument,
            )
        if not ref.id and not (ref.name and ref.name.strip()):
            raise InvalidRequestError("each reference needs an id or a name", argument=argument)
        for text in (ref.id, ref.name):
            if text is not None:
                _check_encodable(text, argument)
                if text.strip():
                    check_identifier(text, argument, limits)
        if ref.type is not None:
            ref = ref.model_copy(update={"type": check_entity_type(ref.type, argument)})
        refs.append(ref)
    return refs


def check_order(order_by: Any, order_dir: Any) -> tuple[str, str]:
    """A ``list_sessions`` ordering: a known field and asc/desc."""
    field = check_str(order_by, "order_by")
    if field not in ORDER_FIELDS:
        raise InvalidRequestError(
            f"{field!r} is not orderable (allowed: {', '.join(ORDER_FIELDS)})", argument="order_by"
        )
    direction = check_str(order_dir, "order_dir").lower()
    if direction not in ("asc", "desc"):
        raise InvalidRequestError("must be 'asc' or 'desc'", argument="order_dir")
    return field, direction


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """Canonical JSON for stored metadata (keys kept in caller order)."""
    if not metadata:
        return "{}"  # the common case, without building an encoder (2 µs of every write)
    return json.dumps(metadata, ensure_ascii=False, allow_nan=False)
