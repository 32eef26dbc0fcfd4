"""Which scenarios check each promise of the README's "deliberately differs" section.

A promise is a bullet of that section that starts with a bold lead (``- **lead** …``);
the key here is the lead exactly as written (backticks included). The other bullets
(Bolt specifically, the NAMS adapter, the turn protocol) describe one backend or layer
and are tested by that backend's own tests, not by the portable suite.

``python -m conformance.catalog --check`` fails when the README has a promise that is not
in this table, when the table names a promise the README no longer has, when a promise
maps to no scenario, or when it names a scenario that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## Where memory-core deliberately differs from the documented reference behaviour"

PROMISES: dict[str, tuple[str, ...]] = {
    "Order is a per-conversation sequence number": (
        "writes.rapid_inserts_keep_order",
        "writes.caller_timestamps",
        "writes.concurrent_writers",
        "reads.oldest_first",
    ),
    "`limit` keeps the newest N": (
        "reads.limit_keeps_newest",
        "limits.default_read_boundary",
        "writes.caller_timestamps",
    ),
    "`since`": (
        "since.strictly_after",
        "since.microseconds",
        "since.before_limit",
        "since.server_side",
    ),
    "Idempotency keys": (
        "idempotency.replay_writes_nothing",
        "idempotency.replay_keeps_original",
        "idempotency.scoped_to_conversation",
        "idempotency.concurrent_replays",
        "writes.duplicates_stored_separately",
    ),
    "Bad input": (
        "errors.bad_role",
        "errors.content_not_str",
        "errors.metadata_not_json",
        "errors.batch_all_or_nothing",
        "errors.unencodable_text",
        "errors.huge_int",
    ),
    "`search_messages`": (
        "search.scores",
        "search.score_scale",
        "search.threshold",
        "search.limit_keeps_best",
        "search.vector",
    ),
    "`metadata_filters`": ("search.metadata_filters", "search.filters_before_limit"),
    "`clear_session`": (
        "clear.idempotent",
        "clear.others_intact",
        "clear.accepts_new_messages",
    ),
    "A missing session reads as an empty conversation with a stable id": (
        "conversations.missing_session_stable_id",
    ),
    "`conversation_id` alone": (
        "aliasing.conversation_id_alone",
        "aliasing.unknown_conversation_id",
    ),
    "`create_conversation` is idempotent": ("conversations.create_is_idempotent",),
    "`delete_message` really deletes": (
        "delete.first_middle_last",
        "delete.then_append",
        "delete.unknown_is_false",
        "delete.search_forgets",
    ),
    "`search_messages` honours `session_id`": (
        "search.session_scoping",
        "search.conversation_id_scoping",
    ),
    "Multi-tenant mode scopes reads too": (
        "tenancy.reads_isolated",
        "tenancy.user_identifier_required",
        "tenancy.user_keys_exact",
        "tenancy.entities_isolated",
    ),
    "One conversation per (tenant, session)": (
        "writes.concurrent_writers",
        "conversations.ids_consistent",
        "conversations.session_names_exact",
    ),
    "Mentions": (
        "entities.mention_by_id",
        "entities.mention_unknown_id",
        "entities.mention_typed",
        "entities.mention_name_only",
    ),
    "Summaries": ("summary.counts_and_times", "summary.summarizer", "nams.observations"),
}

_BOLD_BULLET = re.compile(r"^- \*\*(.+?)\*\*")


def readme_promises(text: str) -> list[tuple[str, str]]:
    """``(group, lead)`` of every bold-led bullet of the section, in README order; the
    group is the bold paragraph above the bullets (``Every backend``, …)."""
    found: list[tuple[str, str]] = []
    inside, group = False, ""
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.strip() == SECTION
            continue
        if not inside:
            continue
        heading = re.fullmatch(r"\*\*(.+)\*\*", line.strip())
        if heading:
            group = heading.group(1)
            continue
        bullet = _BOLD_BULLET.match(line)
        if bullet:
            found.append((group, bullet.group(1)))
    return found


def problems(promises: list[tuple[str, str]], known: set[str]) -> list[str]:
    """What is wrong with :data:`PROMISES` for these README promises and scenario ids."""
    found = []
    leads = {lead for _, lead in promises}
    for lead in sorted(leads - set(PROMISES)):
        found.append(f"README promise {lead!r} maps to no scenario (add it to PROMISES)")
    for lead in sorted(set(PROMISES) - leads):
        found.append(f"PROMISES names {lead!r}, which the README section no longer has")
    for lead, ids in PROMISES.items():
        if not ids:
            found.append(f"promise {lead!r} lists no scenario")
        found += [f"promise {lead!r}: unknown scenario {sid!r}" for sid in ids if sid not in known]
    return found
