"""The long-term section of :meth:`memory_core.MemoryBackend.get_context`: the user's
preferences and the facts about the entities the recent messages mention, in at most
``chars`` characters.

::

    ## Preferences
    - [food] likes spicy dishes (at dinner)
    ## Facts
    - Alice WORKS_AT Acme

The user is the caller's ``user_identifier``, else the one the conversation records;
the section holds only that user's preferences and facts (with no user at all, the facts
of the whole store), so one user's context never shows another's.
Preferences come newest first (superseded ones left out); facts are those valid now,
newest first, for at most :data:`MAX_SUBJECTS` entities, the most recently mentioned
first. Lines are added in that order while they fit in ``chars`` (a line that does not
fit ends its section); a section with no line is left out.
"""

from __future__ import annotations

from . import requests as rq
from .interface import Store
from .models import Conversation, Fact, Preference, utcnow

MAX_SUBJECTS = 5
"""Most entities whose facts the section lists."""
PER_KIND = 20
"""Most preferences, and most facts per entity, read for the section."""


async def section(store: Store, conversation: Conversation, scope: rq.Scope, chars: int) -> str:
    """The section's text, ``""`` when there is nothing to say or no room."""
    if chars <= 0:
        return ""
    user = scope.user_identifier or conversation.user_identifier
    owner = rq.Scope(user_identifier=user, tenant=scope.tenant)
    blocks: list[str] = []
    room = chars
    if store.capabilities.preferences and user is not None:
        found = await store.list_preferences(
            rq.ListPreferences(category=None, include_superseded=False, limit=PER_KIND, scope=owner)
        )
        room = _block("## Preferences", [_preference(p) for p in found], room, blocks)
    if store.capabilities.facts:
        lines = [_fact(f) for f in await _facts(store, conversation, owner)]
        _block("## Facts", lines, room, blocks)
    return "\n\n".join(blocks)


async def _facts(store: Store, conversation: Conversation, scope: rq.Scope) -> list[Fact]:
    names: list[str] = []
    for message in reversed(conversation.messages):
        for ref in message.mentions:
            if ref.name and ref.name not in names:
                names.append(ref.name)
    found: list[Fact] = []
    now = utcnow()
    for name in names[:MAX_SUBJECTS]:
        found += await store.facts_about(
            rq.FactsAbout(subject=name, predicate=None, as_of=now, limit=PER_KIND, scope=scope)
        )
    return found


def _block(title: str, lines: list[str], room: int, blocks: list[str]) -> int:
    """Append ``title`` and the lines that fit; the room left."""
    kept: list[str] = []
    need = len(title) + 1
    for line in lines:
        if need + len(line) + 1 > room:
            break
        kept.append(line)
        need += len(line) + 1
    if kept:
        blocks.append("\n".join([title, *kept]))
        return room - need
    return room


def _preference(preference: Preference) -> str:
    context = f" ({preference.context})" if preference.context else ""
    return f"- [{preference.category}] {preference.preference}{context}"


def _fact(fact: Fact) -> str:
    return f"- {fact.subject} {fact.predicate} {fact.object}"
