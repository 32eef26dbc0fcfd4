"""The documented promises of "where memory-core deliberately differs from the reference"
and the conformance scenarios that check each one: data of the package, read by the
catalog (``SCENARIOS.md``) and by the test that holds the documentation to it.

A promise is keyed by its lead exactly as the documentation writes it in bold (backticks
included); :data:`GROUPS` says which backends make it. Promises that describe one backend
or layer (Bolt specifically, the NAMS adapter, the turn protocol) are tested by that
backend's own tests, not by the portable suite, and are not listed here.
"""

from __future__ import annotations

SECTION = "Where memory-core deliberately differs from the documented reference behaviour"

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
        "search.reference_scores",
        "search.threshold",
        "search.limit_keeps_best",
        "search.vector",
    ),
    "Empty and whitespace-only messages": ("fidelity.content_empty", "fidelity.content_blank"),
    "`str(Conversation.id)` as `session_id`": (
        "aliasing.id_string_session_id",
        "tenancy.id_string_isolated",
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
        "delete.sequence_order_kept",
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
        "tenancy.lesser_paths_isolated",
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
        "entities.mention_order",
    ),
    "Summaries": ("summary.counts_and_times", "summary.summarizer", "nams.observations"),
}

EMBEDDED_AND_BOLT = (
    "A missing session reads as an empty conversation with a stable id",
    "`conversation_id` alone",
    "`create_conversation` is idempotent",
    "`delete_message` really deletes",
    "`search_messages` honours `session_id`",
    "Multi-tenant mode scopes reads too",
    "One conversation per (tenant, session)",
    "Mentions",
    "Summaries",
)
REASONING: dict[str, tuple[str, ...]] = {
    "Step numbers are taken in the write transaction.": ("traces.step_numbers",),
    "A trace is completed once.": ("traces.complete_once",),
    "Traces belong to a user": ("traces.user_scoped", "traces.multi_tenant"),
    "Tool statistics are counted from the calls.": ("tool_stats.exact",),
    "`similar_traces` works without an embedder.": ("similar_traces.ranking",),
}
"""The promises of reasoning memory: every backend that claims its flags makes them."""
PROMISES.update(REASONING)


def _group(lead: str) -> str:
    if lead in EMBEDDED_AND_BOLT:
        return "Embedded and Bolt"
    return "Reasoning memory" if lead in REASONING else "Every backend"


# lead -> the backends that make the promise (the bold paragraph above it in the docs)
GROUPS: dict[str, str] = {lead: _group(lead) for lead in PROMISES}


def problems(leads: list[str], known: set[str]) -> list[str]:
    """What is wrong with :data:`PROMISES` for the documented ``leads`` and the scenario
    ids that exist: a documented promise with no scenario, a mapped promise the documents
    no longer make, an empty mapping, an unknown scenario id."""
    found = []
    for lead in sorted(set(leads) - set(PROMISES)):
        found.append(f"documented promise {lead!r} maps to no scenario (add it to PROMISES)")
    for lead in sorted(set(PROMISES) - set(leads)):
        found.append(f"PROMISES names {lead!r}, which the documentation no longer has")
    for lead, ids in PROMISES.items():
        if not ids:
            found.append(f"promise {lead!r} lists no scenario")
        found += [f"promise {lead!r}: unknown scenario {sid!r}" for sid in ids if sid not in known]
    return found
