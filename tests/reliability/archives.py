"""Archive records built by hand, for the tests that feed the importer hostile ones."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

from memory_core.transfer import FORMAT

STAMP = "2026-05-20T09:30:00.000000Z"


def archive(*records: dict[str, Any]) -> list[str]:
    """The lines of an archive holding ``records`` (header and end added)."""
    header = {
        "record": "header",
        "format": FORMAT,
        "version": 1,
        "created_at": STAMP,
        "source": {"backend": "hostile", "capabilities": {"flags": {}, "limits": {}}},
    }
    end = {"record": "end", "counts": {}}
    return [json.dumps(r) + "\n" for r in (header, *records, end)]


def conversation(cid: str, session: str, user: str | None) -> dict[str, Any]:
    return {
        "record": "conversation",
        "id": cid,
        "session_id": session,
        "user_identifier": user,
        "metadata": {},
        "created_at": STAMP,
    }


def message(mid: str, cid: str, content: str, seq: int = 0) -> dict[str, Any]:
    return {
        "record": "message",
        "id": mid,
        "conversation_id": cid,
        "seq": seq,
        "role": "user",
        "content": content,
        "metadata": {},
        "created_at": STAMP,
    }


def entity(eid: str, user: str | None, name: str, kind: str = "ORGANIZATION") -> dict[str, Any]:
    return {"record": "entity", "id": eid, "user_identifier": user, "name": name, "type": kind}


def mention(mid: str, eid: str) -> dict[str, Any]:
    return {"record": "mention", "message_id": mid, "entity_id": eid, "position": 0}


def loot_linking(kept_id: str, mallory: str, *more: dict[str, Any]) -> list[str]:
    """Mallory's archive: her entity and conversation "loot", a message under the id of
    someone else's message ``kept_id`` (then ``more`` of hers, put in the same
    conversation), and a mention linking that message to her entity."""
    cid, eid = str(uuid4()), str(uuid4())
    return archive(
        entity(eid, mallory, "Mallory Corp"),
        conversation(cid, "loot", mallory),
        message(kept_id, cid, "mallory's"),
        *[{**record, "conversation_id": cid} for record in more],
        mention(kept_id, eid),
    )
