"""Survivors of ``scripts/mutation.py`` triaged by hand, per target.

For each target: patterns of mutmut's mutant names (``<module>.x_<function>__mutmut_<n>``,
relative to the target's package, e.g. ``memory_core.backends.embedded``) and why no test
kills them. Each reason starts with its class: ``equivalent:`` (no caller can tell),
``out of scope:`` (covered by tests outside the target's selection, or not this target's
promise), ``not a promise:`` (behaviour the README does not fix), ``message:`` (error text) or
``missing test:``
(a real gap, still counted against the score). Triaged on the commits recorded in
memory_core/conformance/README.md, "Mutation score".
"""

from __future__ import annotations

_EMBEDDED: list[tuple[str, str]] = [
    (
        r"^location\.|^schema\.|^store\.xǁStoreǁ_connect__",
        "out of scope: parsing embedded URLs and opening the SQLite file (pragmas, folders, "
        "schema); the suite is handed one working URL, tests/embedded covers these",
    ),
    (
        r"rows\.x_to_message__mutmut_(11|22)$",
        "equivalent: search sets the score on the loaded message afterwards",
    ),
    (
        r"messages\.xǁ_Writerǁwrite__mutmut_(47|57)$|rows\.x_to_message__mutmut_(8|19)$|"
        r"rows\.x_to_conversation__mutmut_13$",
        "not a promise: Message.session_id and Conversation.created_at are informational "
        "(NAMS, for one, has no session names)",
    ),
    (
        r"backend\.xǁEmbeddedBackendǁ_\w+__mutmut_(2|10)$|store\.xǁStoreǁ(call__mutmut_4|"
        r"run__mutmut_[56])$",
        "equivalent: the write flag only picks BEGIN IMMEDIATE over BEGIN; one connection "
        "and one lock already serialise every transaction of a backend object",
    ),
    (
        r"backend\.xǁEmbeddedBackendǁ__init____mutmut_",
        "out of scope: the default URL and busy_timeout checks are embedded options, not "
        "the backend-neutral contract (tests/embedded covers them)",
    ),
    (
        r"store\.(x__rollback|xǁStoreǁ_close|xǁStoreǁrun__mutmut_17|xǁStoreǁ_translate)",
        "out of scope: error and close paths of the SQLite store that no valid call reaches "
        "(tests/embedded injects those failures)",
    ),
    (
        r"filters\.x_metadata_matches__mutmut_",
        "equivalent: the defensive branch for unparseable JSON; stored metadata and filters "
        "are always JSON objects",
    ),
    (
        r"codec\.x_load_json__mutmut_5$|conversations\.x_create__mutmut_47$",
        "equivalent: stored metadata is always a JSON object, never '' or a non-dict",
    ),
    (
        r"codec\.x_to_micros__mutmut_1$",
        "equivalent: datetimes have microsecond resolution, so the true division is exact",
    ),
    (
        r"conversations\.x_tenant_key__mutmut_",
        "equivalent: the stored key of the single tenant is internal; any constant works",
    ),
    (
        r"messages\.xǁ_Writerǁwrite__mutmut_38$",
        "equivalent: sequence numbers may have gaps (deletes leave them too); order is kept",
    ),
    (
        r"search\.x_search__mutmut_44$",
        "equivalent: ties are already in insertion order (a stable sort of rows in num order)",
    ),
    (
        r"search\.x__cosine__mutmut_(12|15|16|21|22|23)$|search\.x__load__mutmut_(27|30|37)$",
        "equivalent: zip(strict=...) on equal lengths, and norm arithmetic on the unit-length "
        "vectors every embedder of the suite (and HashingEmbedder) returns",
    ),
    (
        r"(entities\.x_mentions_of|search\.x__load)__mutmut_(3|9)$",
        "equivalent: the chunk size and step only batch the IN (...) lists",
    ),
    (
        r"search\.x__hybrid_hits__mutmut_(2|3|4|29|32|40|49)$|search\.x_search__mutmut_25$",
        "not a promise: how text and vector scores combine in hybrid search, vectors of "
        "another dimension, and hits at cosine 0 (the README says scores are clipped at 0)",
    ),
    (
        r"conversations\.x_create__mutmut_(1[678]|49|5[03456]|7[67])$|conversations\.x_insert__"
        r"|messages\.x_add_message__mutmut_61$|messages\.x_add_messages__mutmut_42$|"
        r"messages\.xǁ_Writerǁfinish__|conversations\.x_list_(conversations__mutmut_13|"
        r"sessions__mutmut_31)$|conversations\.x_missing__mutmut_[47]$|rows\.x_to_conversation"
        r"__mutmut_(8|16)$|rows\.x_to_session__mutmut_(8|1[347]|2[23])$",
        "not a promise: Conversation.user_identifier, the single-tenant user filter of the "
        "listings, SessionInfo.title/updated_at and creating by conversation_id alone are "
        "not in the README (the toy backend, a correct one, does not filter by user)",
    ),
    (
        r"messages\.xǁ_Writerǁ__init____mutmut_|messages\.xǁ_Writerǁwrite__mutmut_(6|39)$",
        "not a promise: a store timestamp after a caller-supplied one in the future (the "
        "README only says store-assigned timestamps never decrease among themselves)",
    ),
    (
        r"messages\.xǁ_Writerǁwrite__mutmut_(4[2]|48|5[28]|62)$|rows\.x_to_message__mutmut_"
        r"(3|9|14|20|29)$|rows\.x_to_entity__mutmut_(6|11|12)$",
        "not a promise: Message.embedding and Message.idempotency_key echoes and entity "
        "timestamps are informational fields the README does not fix",
    ),
]

_SYNC: list[tuple[str, str]] = [
    (
        r"xǁSyncMemoryBackendǁ__init____mutmut_11$|xǁSyncMemoryBackendǁ_blocking__mutmut_11$",
        "equivalent: None for False where the flag is only ever tested for truth",
    ),
    (
        r"xǁSyncMemoryBackendǁ(__init____mutmut_[2-9]|_run__mutmut_(6|8|9|22)|close__mutmut_[1-3])$",
        "message: the text of SyncCallInEventLoopError and TransportError (their types are "
        "the promise, and tested)",
    ),
]

_TRANSFER: list[tuple[str, str]] = [
    (
        r"^archive\.files\.(x__decode__mutmut_6|x__split__mutmut_15|x_open_text__mutmut_(21|32))$|"
        r"^transfer\.checkpoint\.xǁCheckpointǁ(_load__mutmut_6|record__mutmut_27)$|^transfer\.x_schema__mutmut_8$",
        "equivalent: codec names ignore case ('UTF-8' is 'utf-8')",
    ),
    (
        r"^archive\.files\.x_open_archive__mutmut_[79]$",
        "equivalent: GzipFile's mode defaults to 'rb'",
    ),
    (
        r"^archive\.files\.x__create_beside__mutmut_[45]$",
        "not a promise: the length of the random part of the temporary file's name",
    ),
    (
        r"^archive\.files\.(x_read_records__mutmut_7|x_dump_line__mutmut_[35])$|"
        r"^transfer\.importer\.x_write_records__mutmut_29$",
        "equivalent: None for False where the flag is only ever tested for truth",
    ),
    (
        r"^archive\.files\.x_read_records__mutmut_23$",
        "equivalent: return for break after a broken stream; that branch is only reached "
        "once the header was seen, so the empty-archive check after the loop passes anyway",
    ),
    (
        r"^transfer\.importer\.x_write_records__mutmut_58$",
        "message: the wording of the report's 'no end record' note (its presence is tested)",
    ),
    (
        r"^transfer\.importer\.xǁ_HookWriterǁadd__mutmut_2$",
        "not a promise: the size of the bulk hook's batches (1,000 or 1,001 records)",
    ),
    (
        r"^archive\.files\.x__split__mutmut_24$",
        "equivalent: bytes.find and slicing take None for 0",
    ),
    (
        r"^transfer\.importer\.x_write_records__mutmut_5[012]$",
        "equivalent: unreachable; no caller passes skip_bad without a BadLines to count in",
    ),
    (
        r"^archive\.hooks\.x_keeps_id__mutmut_5$",
        "equivalent: unreachable; a conversation id is checked to be a UUID "
        "(records.UUID_FIELDS) before any hook sees it",
    ),
    (
        r"^transfer\.importer\.x_write_records__mutmut_3[56]$",
        "equivalent: both writers (the hooks' and PublicWriter) ignore a record kind they "
        "do not write, and the reader yields exactly one header",
    ),
    (
        r"^transfer\.importer\.xǁ_Referencesǁ__init____mutmut_[36]$",
        "equivalent: current and mentions are set by the first conversation record before "
        "they are read; a message or mention before it fails the conversations/messages "
        "check first",
    ),
    (
        r"^transfer\.importer\.x_write_records__mutmut_43$",
        "equivalent: the reader refuses any record after the end record (a bad line), so "
        "break and continue both end the loop there",
    ),
    (
        r"^transfer\.checkpoint\.xǁCheckpointǁclose__mutmut_2$",
        "not a promise: recording into a checkpoint after closing it (no caller does)",
    ),
    (
        r"^archive\.files\.x_open_text__mutmut_(16|19|26|30)$",
        "equivalent here: newline=None writes os.linesep, which is '\\n' on the POSIX "
        "platforms tested",
    ),
    (
        r"^transfer\.checkpoint\.xǁCheckpointǁ(_load__mutmut_[24]|record__mutmut_(20|23))$|"
        r"^archive\.files\.x_open_text__mutmut_(15|18|25|29)$|^transfer\.x_schema__mutmut_2$",
        "equivalent here: the default encoding is UTF-8 on the platforms tested (Python "
        "coerces the C locale to UTF-8); it would differ on a Windows code page",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_holds__mutmut_23$",
        "equivalent: max(needed, 2) reads one more message only when needed is 0, where "
        "len(found) >= 0 holds whatever is read",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_count__mutmut_1[12]$",
        "equivalent: any limit at or above the session's length (11**9, 10**10) reads all of "
        "it, and a capped target clamps it to its cap",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_count__mutmut_1$",
        "not a promise: on a capped target 10**9 is clamped to the cap, so the same messages "
        "are counted; the only difference is a CapabilityWarning, and nothing says an import "
        "warns about none",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_reconcile__mutmut_8$",
        "equivalent: min(cap or 1001, 1000) is still 1000 for an uncapped target",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_reconcile__mutmut_9$",
        "equivalent: reading 1,001 instead of 1,000 messages of an uncapped target only moves "
        "a conversation of exactly 1,000 messages from the content match to the exact count; "
        "both find the same unnoted batch when the target holds the copy",
    ),
    (
        r"^transfer\.public_writer\.x__same__mutmut_(11|14|15)$",
        "equivalent: both slices have exactly size items (size is at most both lengths), so "
        "zip's strict check never fires",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_write_one__mutmut_37$",
        "equivalent: extraction_mode='explicit' with no mentions stores none and runs no "
        "extractor, as 'skip' does (checked on the embedded backend with an extractor)",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_write_one__mutmut_44$",
        "equivalent: None for False where the flag is only ever tested for truth",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_write_batch__mutmut_3[67]$",
        "equivalent: add_messages_batch defaults to batch_size=100 and extract_entities=False; "
        "each call carries at most self.chunk <= 100 items, so neither splits nor extracts",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_losses__mutmut_(2|5|12|22|34|55)$|"
        r"^transfer\.public_writer\.xǁPublicWriterǁ_open__mutmut_163$",
        "message: the reason texts of the report's not-carried entries (the field names and "
        "counts are tested)",
    ),
    (
        r"^transfer\.export\.x__public_records__mutmut_(8|9|10|14|15)$",
        "message: the text of the users error (its type and argument are tested) and of the "
        "unreadable-entities note (its presence is tested by substring)",
    ),
    (
        r"^transfer\.export\.x__public_records__mutmut_(28|29|31)$",
        "equivalent: a multi-tenant backend has user_scoped_calls (Capabilities.__post_init__), "
        "so the read is scoped to the listing row's owner, which is the user it was listed for",
    ),
    (
        r"^transfer\.export\.x__public_records__mutmut_30$",
        "not a promise: scoping a single-tenant backend's reads by users=[...]; the README does "
        "not fix the single-tenant user filter",
    ),
    (
        r"^transfer\.export\.x__handles__mutmut_3$",
        "equivalent: every shipped backend with list_sessions chooses its session ids, so "
        "list_conversations (sorted and prefix-filtered here) names the same sessions in the "
        "same order; list_sessions pages are only the cheaper read",
    ),
    (
        r"^transfer\.export\.x__handles__mutmut_20$",
        "equivalent: order_dir is lower-cased before it is checked (validation.check_order)",
    ),
    (
        r"^transfer\.export\.x__named__mutmut_24$",
        "equivalent: PublicWriter keeps a session name with a None title only for an archive "
        "conversation without one, which it created without a title, so the fallback is None",
    ),
    (
        r"^transfer\.export\.x__entity_record__mutmut_(9|11)$",
        "equivalent: the record is taken only from a found entity with exactly the mentioned "
        "id, which every store ranks first for a search by that id; more candidates add none",
    ),
    (
        r"^transfer\.export\.x__entity_record__mutmut_3$",
        "not a promise: scoping a single-tenant backend's entity lookup by users=[...]; the "
        "README does not fix the single-tenant user filter",
    ),
    (
        r"^archive\.records\.x_ref_of__mutmut_",
        "out of scope: ref_of was never called; removed since the first pass (as were "
        "PublicWriter.last_message and the public writer's ImportState.conversations "
        "entries, which nothing read)",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_message__mutmut_(7|9|10)$",
        "equivalent: unreachable; the importer refuses a message before any conversation "
        "record (importer._References) before a writer sees it",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_flush__mutmut_(2|13)$",
        "equivalent: a conversation's pending list is only empty with a handle when nothing "
        "is left to write, so reconciling it does nothing; None for False where only truth "
        "is tested",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_flush__mutmut_14$",
        "equivalent: reconciling again after the first batch finds nothing extra where the "
        "conversation can be read whole (done already counts what was written); on a capped "
        "target it compares the newest messages with the next batch, which matches only "
        "where the archive repeats its own last messages",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_open__mutmut_(18|96)$",
        "equivalent: the archive id of a conversation that is not carried is never read "
        "(nothing is written or noted for it)",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_open__mutmut_(78|81|83)$",
        "equivalent: only whether the session has any message is read; any limit >= 1 answers that",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_open__mutmut_37$",
        "equivalent: the stale checkpoint entry is superseded by the record() that follows "
        "for the same conversation once it is created again",
    ),
    (
        r"^transfer\.cli\.x__run__mutmut_34$",
        "equivalent: None for False where the flag is only ever tested for truth",
    ),
    (
        r"^transfer\.cli\.x__(copy__mutmut_40|import__mutmut_41)$",
        "equivalent: a target with a bulk hook resumes by id and never opens a checkpoint "
        "it is handed (importer.import_memory passes it to the public writer only)",
    ),
    (
        r"^archive\.records\.x__short__mutmut_",
        "message: how a bad value is quoted inside an error message (that a long one is "
        "cut is tested; the exact boundary is wording)",
    ),
    (
        r"^archive\.records\.x_(header__mutmut_12|stamp__mutmut_[46]|parse_stamp__mutmut_15)$",
        "equivalent here: a naive or local time is UTC on the machines tested (TZ unset); "
        "it would differ under another local zone",
    ),
    (
        r"^archive\.records\.x_parse_stamp__mutmut_[78]$",
        "equivalent: datetime.fromisoformat reads a trailing 'Z' itself since Python 3.11 "
        "(the oldest supported)",
    ),
    (
        r"^archive\.records\.x__check_message__mutmut_42$",
        "equivalent: None for False where the flag is only ever tested for truth",
    ),
    (
        r"^transfer\.public_writer\.xǁPublicWriterǁ_open__mutmut_27$",
        "equivalent: a target without user_scoped_calls is single-tenant; naming the "
        "record's own user in its reads finds the same session, without a warning",
    ),
    (
        r"^transfer\.export\.x_iter_records__mutmut_33$",
        "equivalent: no bulk export hook (embedded, Bolt, PostgreSQL) writes to the report "
        "it is handed; only the public path records truncated and unreadable conversations",
    ),
]

_INTEGRATIONS: list[tuple[str, str]] = [
    (
        r"^_bridge\.x_warn_if_truncated__mutmut_(9|14|15)$|"
        r"^llamaindex\.xǁMemoryChatStoreǁ_may_replace__mutmut_(6|14|15|16|17)$|"
        r"^llamaindex\.xǁMemoryChatStoreǁ_need_delete__mutmut_(3|9|10)$|"
        r"^llamaindex\.xǁMemoryChatStoreǁa?get_keys__mutmut_(3|11|12)$|"
        r"^openai_agents\.xǁMemorySessionǁpop_item__mutmut_(11|12|13)$|"
        r"^strands\.xǁMemorySessionManagerǁredact_latest_message__mutmut_(3|11|12)$",
        "message: the workaround text of a NotSupportedError (its backend, method and "
        "message are tested)",
    ),
    (
        r"^langchain\.x__role__mutmut_(4|8|12|13|21)$|"
        r"^openai_agents\.x__role_and_text__mutmut_(17|18|28|36)$|"
        r"^pydantic_ai\.x__role__mutmut_(2|7|11|13)$|^strands\.x__role__mutmut_(15|19|27)$",
        "equivalent: backends read a role case-insensitively ('ASSISTANT' is stored as "
        "'assistant'); a ChatMessage role missing from LangChain's tuple falls back to "
        "'user' anyway; any type ending in '_output' is a tool output already",
    ),
    (
        r"xǁ(MemoryRetriever|MemoryChatStore)ǁmodel_post_init__mutmut_1$",
        "equivalent: pydantic's BaseModel.model_post_init ignores its context",
    ),
    (
        r"^llamaindex\.xǁMemoryChatStoreǁ_items__mutmut_(32|37|38)$",
        "equivalent: pydantic dumps in python mode for any mode but 'json', and a plain "
        "ChatMessage's python dump equals its JSON one (its role is a str enum)",
    ),
    (
        r"^llamaindex\.xǁMemoryChatStoreǁ_read__mutmut_6$|"
        r"^llamaindex\.xǁMemoryChatStoreǁa?delete_last_message__mutmut_(6|8|9)$|"
        r"^llamaindex\.xǁMemoryChatStoreǁa?set_messages__mutmut_(5|7|8)$|"
        r"^openai_agents\.xǁMemorySessionǁpop_item__mutmut_(17|20|22)$|"
        r"^strands\.xǁMemorySessionManagerǁredact_latest_message__mutmut_(16|20|23)$",
        "equivalent: reading more than the newest message still ends with it, and "
        "set_messages only asks whether the session holds any",
    ),
    (
        r"^llamaindex\.xǁMemoryChatStoreǁa?get_keys__mutmut_(23|33)$",
        "equivalent: list_sessions' default limit is 100, the page size, and it reads "
        "order_dir case-insensitively",
    ),
    (
        r"^mcp_server\.x__listen__mutmut_(10|17|26)$",
        "equivalent: SOCK_STREAM is socket.socket's default type, any nonzero SO_REUSEADDR "
        "turns it on, and a backlog of 129 for 128 changes nothing a client sees",
    ),
    (
        r"^mcp_server\.x__request_id__mutmut_10$",
        "equivalent: Python's codec names are case-insensitive ('UTF-8' is 'utf-8')",
    ),
    (
        r"^mcp_server\.x__serve_http__mutmut_",
        "out of scope: checked in-process by test_mcp_transport.py::test_the_http_server_"
        "guards_every_request_and_serves_mcp and through the command by the subprocess "
        "tests, neither of which can run under mutmut (uvicorn takes the trampolined "
        "middleware for an app factory; subprocesses run unmutated code)",
    ),
    (
        r"^mcp_server\.x__token__mutmut_(4|7|8)$",
        "equivalent: the warning ends with a newline on a line-buffered stderr, so it is "
        "flushed either way",
    ),
    (
        r"^mcp_server\.x__tools__mutmut_(13[4-9]|14[0-8])$",
        "message: the wording of a tool's description (add_message's is pinned whole, and "
        "which capability note each tool carries is tested)",
    ),
    (
        r"^mcp_server\.x__tools__mutmut_(96|97|98)$",
        "equivalent: the MCP server turns a tool's result into JSON with pydantic either way, "
        "so a python-mode dump of a SessionInfo gives the same text",
    ),
    (
        r"^mcp_server\.x_serve_stdio__mutmut_8$",
        "equivalent: given no initialization options, the MCP server builds the same ones "
        "itself (create_initialization_options)",
    ),
    (
        r"^mcp_server\.x__transport_security__mutmut_32$",
        "equivalent: DNS rebinding protection is TransportSecuritySettings' default",
    ),
    (
        r"^mcp_server\.x_build_server__mutmut_(10|11|21|24)$",
        "equivalent or message: the server's instructions are free text for the model (the "
        "backend's name in them is tested), and MCPServer names a tool after its function "
        "when no name is given",
    ),
    (
        r"^mcp_server\.x_unreadable_line_reply__mutmut_(29|31|34|36|39)$",
        "equivalent: pydantic's json_invalid errors always carry a msg, and the stdio "
        "transport always hands on the line as text",
    ),
    (
        r"^mcp_server\.xǁ_RequireTokenǁ_authorized__mutmut_2$",
        "equivalent: without an Authorization header the presented credentials are empty "
        "either way (b'XXXX' has no space: the scheme is XXXX, the credentials empty)",
    ),
    (
        r"^openai_agents\.x__from_stored__mutmut_(3|7)$|"
        r"^openai_agents\.xǁMemorySessionǁadd_items__mutmut_20$|"
        r"^strands\.x__from_stored__mutmut_3$|^strands\.x__plain__mutmut_1$",
        "equivalent: typing.cast does nothing at run time",
    ),
    (
        r"^pydantic_ai\.xǁMemoryMessageHistoryǁ_items__mutmut_(44|47|48)$|"
        r"^pydantic_ai\.xǁMemoryMessageHistoryǁ_messages__mutmut_(21|24|25)$",
        "equivalent: the two sequences zipped always have the same length (one is made from "
        "the other)",
    ),
    (
        r"^strands\.x__role__mutmut_(3|5)$|^strands\.x__text__mutmut_(6|8)$",
        "not a promise: a Strands Message always has content (its TypedDict requires it); "
        "what a message without it is stored as is not defined",
    ),
]

_NAMS: list[tuple[str, str]] = [
    (
        r"^transport\.xǁNamsTransportǁ_credential_hint__mutmut_(4|6|7|8|9)$|"
        r"^backend\.xǁNamsStoreǁ_context__mutmut_22$|^sessions\.x_parse__mutmut_3$|"
        r"^erasure\.x__page__mutmut_(26|27|31|32)$",
        "message: the text of an error (the credential hint after a 401; the method and "
        "route an unreadable answer names); the error's type is tested",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_context__mutmut_29$|"
        r"^backend\.xǁNamsStoreǁget_context__mutmut_(13|14)$",
        "equivalent: format_context reads its message lists by truth, so None and [] "
        "give the same text",
    ),
    (
        r"^backend\.xǁNamsStoreǁfind_entities__mutmut_27$|"
        r"^backend\.xǁNamsStoreǁadd_entity__mutmut_24$",
        "equivalent: httpx sends the method upper-cased, and a POST is retried under the "
        "same rules in either spelling (neither is idempotent)",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_context__mutmut_(35|36)$",
        "equivalent: the search request get_context builds is read for its query, limit "
        "and target only (its filters and scope are not sent to the service)",
    ),
    (
        r"^erasure\.x__forget_name__mutmut_(2|16|20|21)$",
        "equivalent: the name is read needlessly where there is no cache; forget(name) "
        "also drops the id remembered beside the name, and a portable id is never "
        "remembered without its name",
    ),
    (
        r"^marker\.xǁSessionSecretǁverifies__mutmut_(13|20|21|27|32)$",
        "equivalent: a digest holds no ':' (partition and rpartition split the same); a "
        "16-digit stamp is centuries away, outside the window either way; a naive "
        "createdAt read as local time is UTC on a UTC clock; a float difference exactly "
        "equal to the window does not occur",
    ),
    (
        r"^marker\.xǁSessionSecretǁ__repr____mutmut_[123]$|"
        r"^sessions\.xǁNameIndexǁ_give_up__mutmut_(7|14|16|17)$",
        "message: the text of a repr and of the index file's warning (that neither shows "
        "the secret, and that the warning is logged once naming the file, are tested)",
    ),
    (
        r"^sessions\.xǁNameIndexǁ_give_up__mutmut_2$|^sessions\.xǁNameIndexǁpop_user__mutmut_4$|"
        r"^marker\.xǁSessionSecretǁ_digest__mutmut_3$",
        "equivalent: a connection that failed is not closed early (the garbage collector "
        "closes it; nothing reads it again); write=None reads as write=False, and "
        "ensure_ascii=None as ensure_ascii=False",
    ),
    (
        r"^transport\.xǁNamsTransportǁ_status_error__mutmut_(4|5)$",
        "equivalent: an empty error body fails to parse as JSON and reads as None, and "
        "parse_error reads None, '' and any other non-object alike (no code, no message)",
    ),
    (
        r"^transport\.xǁNamsTransportǁ_status_error__mutmut_43$|"
        r"^sessions\.x_parse_page__mutmut_(5|6)$|^sessions\.x_parse_json__mutmut_4$|"
        r"^sessions\.x_parse_messages__mutmut_19$|"
        r"^sessions\.xǁSessionNamesǁ_create__mutmut_(40|47)$|"
        r"^backend\.xǁNamsStoreǁget_conversation__mutmut_(43|44|50|51)$|"
        r"^backend\.xǁNamsStoreǁ_messages__mutmut_2$|"
        r"^backend\.xǁNamsStoreǁ__init____mutmut_(103|127)$",
        "message: the text of an error (the workaround after a 405/501, which still names "
        "backend.capabilities; the method and route an unreadable answer names; what a "
        "service that drops userId or stamps createdAt far off is told; a refused "
        "http_transport)",
    ),
    (
        r"^backend\.xǁNamsStoreǁconnect__mutmut_21$",
        "equivalent: the index rows of a backend with no workspace are scoped by another "
        "constant text, written and read by the same rule (only a workspace named exactly "
        "like the constant would then share them; the scope text is not a promise, and "
        "the rows are a cache: a changed rule costs one lookup per name)",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_listed__mutmut_(1|12|15)$",
        "equivalent: a listed conversation's id is the same whichever branch computes it "
        "(_uuids parses in one pass what _uuid parses one by one, for every id spelling); "
        "only the speed differs",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_listed__mutmut_(18|21|22)$|"
        r"^backend\.xǁNamsStoreǁ_from_wire__mutmut_(62|65|66)$",
        "equivalent: _uuids returns one id per header (or message), so zip(strict=...) "
        "never has a longer side to catch",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_missing_conversation__mutmut_3$|"
        r"^sessions\.x_header_id__mutmut_3$|"
        r"^sessions\.xǁSessionNamesǁresolve_id__mutmut_27$",
        "equivalent: unreachable branches: an empty session_id is refused before any "
        "store call, header_id is only given headers that carry a name, and the scan "
        "after a 404 on the id cannot find a conversation whose server id is that id",
    ),
    (
        r"^sessions\.xǁSessionNamesǁ_create__mutmut_67$|^sessions\.xǁSessionNamesǁ_scan__mutmut_2$",
        "equivalent: a rival found after the create whose server id is the name would have "
        "been found by the lookup's GET of that id first; a first cursor of '' is as absent "
        "as None",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_on__mutmut_(21|48)$",
        "equivalent: only the truth of the attempt number is read; a resolved session's "
        "name is the name its header carries whenever the lookup fetched a header",
    ),
    (
        r"^sessions\.xǁSessionNamesǁresolve__mutmut_54$",
        "equivalent: the scan keeps only the user's own conversations for an alias, so the "
        "fallback (the oldest found) picks the same conversation, with the same id and name",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_on__mutmut_(18|39|40|41|71|72|73)$",
        "message: the hint a NotFoundError carries (also given on a read), and the text of "
        "assertions that guard unreachable states (a read without missing=, the end of "
        "the two attempts)",
    ),
    (
        r"^transport\.xǁNamsTransportǁ_headers__mutmut_(3|4|6|8|9)$",
        "equivalent: HTTP header names and media types are case-insensitive (Accept, "
        "User-Agent, application/json)",
    ),
    (
        r"^transport\.xǁNamsTransportǁsend__mutmut_(22|23|24)$",
        "equivalent: the base URL never ends with '/' (resolve_base_url strips it) nor "
        "starts with one, so how the span's url.full would drop a trailing one changes "
        "nothing",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_from_wire__mutmut_27$",
        "equivalent: a role is looked up in its exact spelling inline only for speed; "
        "_role finds the same role for every spelling (and refuses the same unknown ones)",
    ),
    (
        r"^backend\.xǁNamsStoreǁ_header_values__mutmut_6$|"
        r"^sessions\.xǁSessionNamesǁ__init____mutmut_7$",
        "equivalent: read by truth only: '' as None (the id falls through to the next "
        "candidate either way) and None as False (the 'logged once' flag)",
    ),
    (
        r"^backend\.xǁNamsStoreǁadd_message__mutmut_37$",
        "equivalent: a Message's created_at defaults to utcnow() when it is built, the "
        "same moment the explicit utcnow() reads",
    ),
    (
        r"^transport\.xǁNamsTransportǁopen__mutmut_17$",
        "equivalent: http2=False is httpx's default",
    ),
    (
        r"^transport\.xǁNamsTransportǁopen__mutmut_(6|7|23)$",
        "equivalent: with HTTP/2 off, httpcore reads http1 only together with http2; it "
        "offers 'http/1.1' alone in TLS and opens an HTTP/1.1 connection either way (None "
        "for either flag is read by truth, as False)",
    ),
    (
        r"^transport\.xǁNamsTransportǁopen__mutmut_(9|16|19)$",
        "equivalent: httpx's defaults are http1=True and follow_redirects=False, and it "
        "reads follow_redirects by truth (None as False)",
    ),
    (
        r"^transport\.xǁNamsTransportǁ__init____mutmut_[123]$",
        "equivalent: the defaults of trust_env and backend are never used: NamsStore, the "
        "transport's only maker, passes both",
    ),
    (
        r"^transport\.xǁNamsTransportǁsend__mutmut_(77|81)$",
        "equivalent: a 204 carries no body over HTTP (h11 reads none), so b'' is its "
        "content; no route of the wire answers 205",
    ),
    (
        r"^backend\.xǁNamsStoreǁ__init____mutmut_159$",
        "equivalent: NamsStore.name is 'nams', the transport's default backend name; only "
        "the error text of a subclass that renames itself would differ",
    ),
    (
        r"^backend\.xǁNamsStoreǁ__init____mutmut_52$",
        "equivalent: the index rows of a store without a session secret are scoped by "
        "another constant text, written and read by the same rule; a marked store's scope "
        "starts ' marked:' and cannot equal it (the rows are a cache: a changed rule costs "
        "one lookup per name)",
    ),
    (
        r"^sessions\.x_parse_page__mutmut_2$|^sessions\.x_parse_messages__mutmut_6$|"
        r"^sessions\.x_parse_json__mutmut_1$|"
        r"^backend\.x__uuids__mutmut_1$",
        "equivalent: the fast validator fails on None and the model fallback reads the "
        "same body into the same values; only the speed differs",
    ),
    (
        r"^sessions\.xǁLruǁput__mutmut_4$|^sessions\.xǁNameIndexǁget__mutmut_4$|"
        r"^sessions\.x__close__mutmut_2$",
        "equivalent: last=None and write=None read as False; closing an opened SQLite "
        "connection on its thread-check-free handle does not raise",
    ),
    (
        r"^sessions\.xǁNameIndexǁ_open__mutmut_(17|18|21|22|24)$|"
        r"^sessions\.xǁNameIndexǁget__mutmut_(9|10)$",
        "equivalent: SQLite keywords, identifiers and the journal_mode value are case-insensitive",
    ),
    (
        r"^sessions\.xǁNameIndexǁ_open__mutmut_(13|14)$",
        "not a promise: check_same_thread matters only for a connection used from another "
        "thread; the index is used on the event loop's thread only (the blocking API runs "
        "the backend on its portal thread; nothing in the adapter hands it to a worker)",
    ),
    (
        r"^sessions\.xǁSessionNamesǁ_create__mutmut_14$",
        "not a promise: a name's conversation created with no user sends userId null "
        "instead of leaving it out; the wire model reads both as no user",
    ),
    (
        r"^sessions\.xǁSessionNamesǁ_withdraw__mutmut_(10|14|19|20|21)$",
        "not a promise: the page size of a race loser's 'is it still empty' read; any page "
        "of one message or more gives the same answer, only the answer's size changes",
    ),
]

_BOLT: list[tuple[str, str]] = [
    (
        r"^backend\.xǁBoltStoreǁadd_messages__mutmut_86$",
        "message: the text of the error for a batch that ran out of transaction memory "
        "(its type and that nothing was written are tested)",
    ),
    (
        r"^search\.x__index_hits__mutmut_49$",
        "equivalent: metadata_matches reads no filters (None or {}) alike: every row matches",
    ),
    (
        r"^transfer\.xǁ_Importerǁconversation__mutmut_116$",
        "equivalent: a conversation found by id that passes the checks before (same tenant, "
        "same session) is also the first row found by session (FIND_CONVERSATION orders "
        "the one with that id first), with the same id, user and messages flag",
    ),
    (
        r"^records\.x__unreadable__mutmut_(6|8|10|14)$|^errors\.x__code__mutmut_(10|11)$|"
        r"^errors\.x__text__mutmut_(1|2|7|8|9|10|11|12)$",
        "message: the text of an error: how much of an unreadable record's id and reason "
        "it quotes, and the status code or driver text quoted in a translated driver "
        "error (str() of a Neo4jError holds its message too, so what translate() detects "
        "in the text is still there; the driver's message is a str or None, and the "
        "errors without one are told apart by type); the errors' types are tested",
    ),
    (
        r"^cypher\.x__append_(one|batch)__mutmut_4$",
        "equivalent: a message that mentions nothing written by the statement with the "
        "mention subqueries (run on empty lists) instead of the plain one: the same "
        "graph, only slower (the plain variants exist for speed)",
    ),
    (
        r"^cypher\.xǁScopedǁbuild__mutmut_(5|6|8|9|10|11|13|14)$",
        "equivalent: the plain statements built with the mention subqueries (no argument, "
        "`True`) or without them another way (`None` is false; the scope is read only to "
        "link mentions, which a plain statement has none of): the same graph either way",
    ),
    (
        r"^cypher\.x__undated__mutmut_8$",
        "equivalent: `where` for `WHERE` (Cypher's keywords are case-insensitive)",
    ),
    (
        r"^cypher\.xǁEntityScopeǁentities_exist__mutmut_(1|5)$|"
        r"^cypher\.xǁEntityScopeǁmissing_ids__mutmut_(1|5)$",
        "equivalent: the name of the node variable in the EXISTS pattern, which nothing "
        "reads (`None` and `XXXX` are identifiers in Cypher as the empty name is none)",
    ),
    (
        r"^listing\.x__cursor__mutmut_(11|12)$",
        "equivalent: updated_at_us, key_ms and key_ns all come from c.updated_at and are "
        "null together (only a zoned DateTime has epochMillis), so any one null decides",
    ),
    (
        r"^errors\.x_translate__mutmut_(36|37)$",
        'out of scope: the translation of Neo4j\'s "too large to index" error, which no '
        "valid call reaches: identifiers are capped at max_indexed_bytes (3950), the "
        "idempotency key is indexed by its hash, and keys at that cap, alone and in the "
        "composite indexes, are stored (test_keys_at_the_indexed_maximum_are_stored); "
        "the guard stays for a schema changed by hand",
    ),
    (
        r"^session\.xǁConnectionǁread__mutmut_1$",
        "equivalent: execute_read runs its transaction as a read (routed to a reader in a "
        "cluster) whatever the session's default access mode, which only auto-commit "
        "statements use",
    ),
    (
        r"^config\.x__driver_options__mutmut_18$",
        "message: the word for the kind of number a refused driver option must be, which "
        "only the error's text holds",
    ),
    (
        r"^backend\.x__stored__mutmut_34$",
        "equivalent: to_message prefers the node's conversation_id property, which every "
        "message a write statement returns carries (it was just written with it)",
    ),
    (
        r"^records\.x_to_message__mutmut_3$",
        "equivalent: every caller passes the id of the conversation it read the message "
        "from, which is the node's conversation_id property whenever it has one",
    ),
    (
        r"^session\.xǁConnectionǁ_session__mutmut_(3|17)$",
        "equivalent: the records fetched per network round trip of a read that may stop "
        "early (the driver takes None for its default): the same records, in more or "
        "fewer fetches",
    ),
    (
        r"^transfer\.xǁ_Importerǁ__init____mutmut_9$",
        "equivalent: run() sets the importer's renamed map before anything reads it",
    ),
    (
        r"^transfer\.xǁ_Importerǁappend__mutmut_51$",
        "equivalent: zip(strict=True) over the targets made from the group, one per record",
    ),
    (
        r"^transfer\.xǁBoltTransferǁ_messages__mutmut_45$",
        "equivalent: the exported message record takes its conversation id from the page "
        "being read, not from the Message read from the node",
    ),
    (
        r"^search\.x__text_hits__mutmut_68$",
        "equivalent in practice: the text a non-text content (a list of strings, which the "
        "full-text index holds) is scored as; only a search for 'xxxx' would score it "
        "(test_a_message_whose_content_is_a_list_does_not_break_a_search)",
    ),
    (
        r"^cypher\.x_list_sessions__mutmut_16$",
        "equivalent on Neo4j 5.26: the rows reach ORDER BY grouped in session_id order and "
        "its sort keeps tied rows in order, so the explicit session_id tie-break changes "
        "nothing there (Cypher promises neither, so it stays; sessions.order_and_offset "
        "makes its sessions last name first and still passes without it)",
    ),
]

REASONS: dict[str, list[tuple[str, str]]] = {
    "embedded": _EMBEDDED,
    "sync": _SYNC,
    "transfer": _TRANSFER,
    "integrations": _INTEGRATIONS,
    "nams": _NAMS,
    "bolt": _BOLT,
}

CASE_INSENSITIVE = {"embedded"}
"""Targets whose strings are SQL and ``sqlite3.Row`` keys: a case-only change is equivalent."""
