"""Content and metadata fidelity: what goes in comes out exactly."""

from __future__ import annotations

from typing import Any

from ..checks import invalid, same_json, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

UNICODE = "héllo wörld: 中文, 日本語, 한국어, עברית, العربية, Ελληνικά, e\u0301 vs \u00e9"
EMOJI = "family 👨\u200d👩\u200d👧\u200d👦 flag 🏳️\u200d🌈 thumbs 👍🏽 keycap 1️⃣"
ESCAPES = "line one\nline two\ttab \"double\" 'single' back\\slash \\n literal"
LONG = "".join(f"{i:05d} ünïcode 😀 " for i in range(1000))  # 14,000 characters
HUGE = "".join(f"{i:06d} ünïcode 😀 中文 " for i in range(12_000))  # 216,000 characters

METADATA: dict[str, Any] = {
    "true": True,
    "false": False,
    "one": 1,
    "zero": 0,
    "negative": -7,
    "big": 2**53,
    "float": 1.5,
    "tenth": 0.1,
    "string_one": "1",
    "empty_string": "",
    "none": None,
    "list": [1, "two", True, None, 2.5, [3, [4]]],
    "nested": {"a": {"b": {"c": [{"d": False, "e": 0}]}}},
    "empty_list": [],
    "empty_dict": {},
    "ключ 🔑": "значение\nwith newline",
    "cafe\u0301": "NFD key, NFC value caf\u00e9",
    "caf\u00e9": "NFC key, NFD value cafe\u0301",
    " padded key ": "  padded value\t",
    "huge": 2**62 + 1,
}


async def _round_trip(harness: Harness, content: str) -> None:
    handle = await harness.new_session()
    stored = await harness.backend.add_message(handle, "user", content)
    assert stored.content == content, "add_message returned different content"
    [read] = await harness.messages(handle)
    assert read.content == content, (
        f"content changed: {len(content)} chars in, {len(read.content)} out"
    )


class FidelitySuite(SuiteBase):
    """Scenarios of area ``fidelity``."""

    @scenario("fidelity.content_unicode", "accented, CJK, RTL and combining text round-trips")
    async def test_fidelity_content_unicode(self, harness: Harness) -> None:
        await _round_trip(harness, UNICODE)

    @scenario("fidelity.content_emoji_zwj", "emoji with ZWJ sequences and modifiers round-trip")
    async def test_fidelity_content_emoji_zwj(self, harness: Harness) -> None:
        await _round_trip(harness, EMOJI)

    @scenario("fidelity.content_long", "content of 14,000 characters round-trips")
    async def test_fidelity_content_long(self, harness: Harness) -> None:
        assert len(LONG) > 10_000
        await _round_trip(harness, LONG)

    @scenario(
        "fidelity.content_huge",
        "content of 216,000 characters (about 0.5 MB of UTF-8) round-trips, to the last character",
    )
    async def test_fidelity_content_huge(self, harness: Harness) -> None:
        assert len(HUGE) > 200_000
        await _round_trip(harness, HUGE)

    @scenario("fidelity.content_nul", "content containing NUL characters round-trips")
    async def test_fidelity_content_nul(self, harness: Harness) -> None:
        await _round_trip(harness, "before\x00after\x00")

    @scenario("fidelity.content_empty", "the empty string is stored as an empty message")
    async def test_fidelity_content_empty(self, harness: Harness) -> None:
        await _round_trip(harness, "")

    @scenario(
        "fidelity.content_blank",
        "empty and whitespace-only messages are stored and read back exactly, one by one and "
        "in batches, like any content (the reference stores them too; an assistant turn that "
        "only called tools has no text); no text search ever finds one",
    )
    async def test_fidelity_content_blank(self, harness: Harness) -> None:
        handle = await harness.new_session()
        blanks = ["", " ", "\n", " \t\r\n "]
        stored = [await harness.backend.add_message(handle, "assistant", t) for t in blanks]
        assert [m.content for m in stored] == blanks
        await harness.backend.add_messages_batch(
            handle, [{"role": "user", "content": t} for t in blanks]
        )
        term = word()
        await harness.backend.add_message(handle, "user", f"after the blanks {term}")
        assert await harness.contents(handle) == [*blanks, *blanks, f"after the blanks {term}"]
        hits = await harness.backend.search_messages(f"{term} the", session_id=handle, limit=50)
        assert [h.content for h in hits] == [f"after the blanks {term}"]
        context = await harness.backend.get_context(session_id=handle, max_messages=20)
        assert f"after the blanks {term}" in context

    @scenario("fidelity.content_escapes", "newlines, tabs, quotes and backslashes round-trip")
    async def test_fidelity_content_escapes(self, harness: Harness) -> None:
        await _round_trip(harness, ESCAPES)

    @scenario("fidelity.content_whitespace", "leading and trailing whitespace is kept")
    async def test_fidelity_content_whitespace(self, harness: Harness) -> None:
        await _round_trip(harness, "  \t padded \r\n ")

    @scenario("fidelity.content_in_batch", "batch writes keep content exactly")
    async def test_fidelity_content_in_batch(self, harness: Harness) -> None:
        handle = await harness.new_session()
        texts = [UNICODE, EMOJI, ESCAPES, "", "nul\x00", LONG]
        await harness.backend.add_messages_batch(
            handle, [{"role": "user", "content": t} for t in texts]
        )
        assert await harness.contents(handle) == texts

    @scenario(
        "fidelity.metadata_types",
        "nested metadata round-trips with exact types (bool is not int, int is not float)",
        requires="message_metadata",
    )
    async def test_fidelity_metadata_types(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.backend.add_message(handle, "user", "meta", metadata=METADATA)
        same_json(stored.metadata, METADATA)
        [read] = await harness.messages(handle)
        same_json(read.metadata, METADATA)

    @scenario(
        "fidelity.metadata_empty",
        "metadata None or {} comes back as {}",
        requires="message_metadata",
    )
    async def test_fidelity_metadata_empty(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.backend.add_message(handle, "user", "none", metadata=None)
        await harness.backend.add_message(handle, "user", "empty", metadata={})
        await harness.backend.add_message(handle, "user", "omitted")
        read = await harness.messages(handle)
        assert [m.metadata for m in read] == [{}, {}, {}]

    @scenario(
        "fidelity.metadata_in_batch",
        "batch writes keep each message's metadata exactly",
        requires="message_metadata",
    )
    async def test_fidelity_metadata_in_batch(self, harness: Harness) -> None:
        handle = await harness.new_session()
        batch: list[dict[str, Any]] = [
            {"role": "user", "content": "a", "metadata": {"n": 1, "flag": True}},
            {"role": "user", "content": "b"},
            {"role": "user", "content": "c", "metadata": METADATA},
        ]
        await harness.backend.add_messages_batch(handle, batch)
        read = await harness.messages(handle)
        same_json(read[0].metadata, {"n": 1, "flag": True})
        same_json(read[1].metadata, {})
        same_json(read[2].metadata, METADATA)

    @scenario(
        "fidelity.nul_in_strings",
        "a NUL character behaves alike on every backend: in a title or an idempotency key it "
        "is stored and read back exactly, in a metadata filter's key or value it matches "
        "exactly, a list_sessions prefix holding one finds no session; in session_id and "
        "user_identifier it is refused naming the argument, nothing written",
    )
    async def test_fidelity_nul_in_strings(self, harness: Harness) -> None:
        handle = await harness.new_session()
        with invalid("session_id"):
            await harness.backend.add_message(f"{handle}\x00", "user", "x")
        with invalid("user_identifier"):
            await harness.backend.add_message(handle, "user", "x", user_identifier="u\x00")
        assert await harness.contents(handle) == [], "refused input was written"
        caps = harness.caps
        if caps.conversation_titles:
            await _nul_title(harness)
        if caps.idempotency_keys:
            await _nul_key(harness, handle)
        if caps.search_metadata_filters and caps.message_metadata:
            await _nul_filters(harness, await harness.new_session())
        if caps.list_sessions:
            assert await harness.backend.list_sessions(prefix=f"{handle}\x00") == []


NUL_TITLE = "title\x00with nul\x01"


async def _nul_title(harness: Harness) -> None:
    label = harness.unique()
    made = await harness.backend.create_conversation(session_id=label, title=NUL_TITLE)
    handle = label if harness.caps.client_chosen_ids else str(made.id)
    harness.track(handle)
    assert made.title == NUL_TITLE
    assert (await harness.backend.get_conversation(handle)).title == NUL_TITLE
    if harness.caps.list_sessions and harness.caps.client_chosen_ids:
        [listed] = await harness.backend.list_sessions(prefix=label)
        assert listed.title == NUL_TITLE


async def _nul_key(harness: Harness, handle: str) -> None:
    backend = harness.backend
    first = await backend.add_message(handle, "user", "once", idempotency_key="key\x00nul")
    assert first.idempotency_key == "key\x00nul"
    again = await backend.add_message(handle, "user", "twice", idempotency_key="key\x00nul")
    assert again.id == first.id, "a replayed key with a NUL wrote a second message"
    other = await backend.add_message(handle, "user", "other", idempotency_key="key")
    assert other.id != first.id, "keys that differ by a NUL were taken as one"
    read = await harness.messages(handle)
    assert [(m.content, m.idempotency_key) for m in read] == [
        ("once", "key\x00nul"),
        ("other", "key"),
    ]


async def _nul_filters(harness: Harness, handle: str) -> None:
    term = word()
    wanted: dict[str, Any] = {"k\x00": "v\x00", "deep": {"\x01": ["\x00", 1]}}
    others: list[dict[str, Any]] = [{"k\x00": "v"}, {"k": "v\x00"}, {"deep": {"\x01": [""]}}]
    hit = await harness.backend.add_message(handle, "user", term, metadata=wanted)
    for metadata in others:
        await harness.backend.add_message(handle, "user", term, metadata=metadata)
    for filters in ({"k\x00": "v\x00"}, {"deep": wanted["deep"]}, wanted):
        found = await harness.backend.search_messages(
            term, session_id=handle, metadata_filters=filters
        )
        assert [m.id for m in found] == [hit.id], f"filter {filters!r} found {len(found)}"
        same_json(found[0].metadata, wanted)
    none = await harness.backend.search_messages(
        term, session_id=handle, metadata_filters={"k\x00": "v\x01"}
    )
    assert none == []
