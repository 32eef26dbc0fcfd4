"""Long-term memory: preferences, facts, relationships between entities, entity search.

Preferences and facts are written for a fresh user each scenario and deleted at clean-up
(:meth:`~memory_core.conformance.harness.Harness.add_preference`); relationships go with
the entities they join, which the harness deletes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core import EntityRef, InvalidArgumentTypeError, NotFoundError

from ..checks import invalid, same_json, word
from ..harness import Harness
from ..scenarios import NOT_APPLICABLE, scenario
from .base import SuiteBase

ODD = "naïve 🦊 \u4e16\u754c \x00 'quote\" \\ %_"


def _ids(records: list) -> list[str]:  # type: ignore[type-arg]
    return [r.id for r in records]


class PreferencesSuite(SuiteBase):
    """Scenarios of area ``preferences``."""

    @scenario(
        "preferences.round_trip",
        "a preference reads back exactly: category, statement, context, confidence, "
        "metadata, linked entities and user, with odd characters",
        requires="preferences",
    )
    async def test_preferences_round_trip(self, harness: Harness) -> None:
        user = harness.new_user()
        linked = []
        if harness.caps.entities:
            linked = [(await harness.add_entity(word().capitalize(), "PERSON")).id]
        meta = {"source": ODD, "n": 3, "ok": True, "nested": {"x": [1.5, None]}}
        made = await harness.add_preference(
            f"food {ODD}",
            f"likes {word()} {ODD}",
            user=user,
            context=f"at dinner {ODD}",
            confidence=0.25,
            metadata=meta,
            linked_entities=linked,
        )
        [read] = await harness.backend.list_preferences(user_identifier=user)
        for got in (made, read):
            assert got.id == made.id
            assert (got.category, got.preference, got.context) == (
                made.category,
                made.preference,
                made.context,
            )
            assert got.category == f"food {ODD}" and got.context == f"at dinner {ODD}"
            assert got.confidence == 0.25
            same_json(got.metadata, meta)
            assert got.linked_entities == linked
            assert got.user_identifier == user
            assert got.superseded_at is None and got.superseded_by is None

    @scenario(
        "preferences.independent",
        "every add is a record of its own: the same statement twice is two preferences, "
        "listed newest first, filtered by category",
        requires="preferences",
    )
    async def test_preferences_independent(self, harness: Harness) -> None:
        user = harness.new_user()
        first = await harness.add_preference("food", "likes pizza", user=user)
        second = await harness.add_preference("food", "likes pizza", user=user)
        other = await harness.add_preference("music", "likes jazz", user=user)
        assert len({first.id, second.id, other.id}) == 3
        listed = await harness.backend.list_preferences(user_identifier=user)
        assert _ids(listed) == [other.id, second.id, first.id]
        food = await harness.backend.list_preferences("food", user_identifier=user)
        assert _ids(food) == [second.id, first.id]
        assert len(await harness.backend.list_preferences(user_identifier=user, limit=1)) == 1

    @scenario(
        "preferences.search",
        "search_preferences finds a word of the statement, the context or the category, "
        "best first with scores in 0..1, honours category and limit, and finds nothing "
        "for words no preference holds",
        requires="preferences",
    )
    async def test_preferences_search(self, harness: Harness) -> None:
        user = harness.new_user()
        key, ctx = word(), word()
        both = await harness.add_preference("language", f"prefers {key} and {ctx}", user=user)
        one = await harness.add_preference("tools", f"uses {key} daily", user=user)
        by_ctx = await harness.add_preference("style", "short answers", user=user, context=ctx)
        hits = await harness.backend.search_preferences(f"{key} {ctx}", user_identifier=user)
        assert set(_ids(hits)) == {both.id, one.id, by_ctx.id}
        assert hits[0].id == both.id, "the preference holding both words is not first"
        scores = [h.score for h in hits]
        assert all(s is not None and 0 < s <= 1 for s in scores), scores
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        tools = await harness.backend.search_preferences(
            key, category="tools", user_identifier=user
        )
        assert _ids(tools) == [one.id]
        by_category = await harness.backend.search_preferences("language", user_identifier=user)
        assert _ids(by_category) == [both.id]
        limited = await harness.backend.search_preferences(key, limit=1, user_identifier=user)
        assert len(limited) == 1
        assert await harness.backend.search_preferences(word(), user_identifier=user) == []

    @scenario(
        "preferences.supersede",
        "a superseded preference leaves lists and searches but stays readable with the "
        "time and its successor; superseding again changes nothing; unknown ids are named",
        requires="preferences",
    )
    async def test_preferences_supersede(self, harness: Harness) -> None:
        user = harness.new_user()
        key = word()
        old = await harness.add_preference("food", f"likes {key}", user=user)
        new = await harness.add_preference("food", f"avoids {key}", user=user)
        marked = await harness.backend.supersede_preference(old.id, new.id, user_identifier=user)
        assert marked.id == old.id and marked.superseded_by == new.id
        assert marked.superseded_at is not None
        assert _ids(await harness.backend.list_preferences(user_identifier=user)) == [new.id]
        hits = await harness.backend.search_preferences(key, user_identifier=user)
        assert _ids(hits) == [new.id]
        every = await harness.backend.list_preferences(
            include_superseded=True, user_identifier=user
        )
        [kept] = [p for p in every if p.id == old.id]
        assert (kept.superseded_by, kept.superseded_at) == (new.id, marked.superseded_at)
        found = await harness.backend.search_preferences(
            key, include_superseded=True, user_identifier=user
        )
        assert set(_ids(found)) == {old.id, new.id}
        third = await harness.add_preference("food", f"loves {key}", user=user)
        again = await harness.backend.supersede_preference(old.id, third.id, user_identifier=user)
        assert (again.superseded_by, again.superseded_at) == (new.id, marked.superseded_at)
        for argument, pair in (("old_id", (word(), new.id)), ("new_id", (new.id, word()))):
            with pytest.raises(NotFoundError) as info:
                await harness.backend.supersede_preference(*pair, user_identifier=user)
            assert info.value.argument == argument

    @scenario(
        "preferences.delete",
        "delete_preference removes one preference (True), then finds nothing (False); the "
        "one it superseded stays superseded with superseded_by None; deleting an entity "
        "unlinks it from preferences",
        requires="preferences",
    )
    async def test_preferences_delete(self, harness: Harness) -> None:
        user = harness.new_user()
        linked = []
        if harness.caps.entities and harness.caps.delete_entity:
            linked = [(await harness.add_entity(word().capitalize(), "PERSON")).id]
        old = await harness.add_preference("food", f"likes {word()}", user=user)
        gone = await harness.add_preference(
            "food", f"likes {word()}", user=user, linked_entities=linked
        )
        kept = await harness.add_preference(
            "food", f"likes {word()}", user=user, linked_entities=linked
        )
        marked = await harness.backend.supersede_preference(old.id, gone.id, user_identifier=user)
        assert await harness.backend.delete_preference(gone.id, user_identifier=user) is True
        assert await harness.backend.delete_preference(gone.id, user_identifier=user) is False
        assert _ids(await harness.backend.list_preferences(user_identifier=user)) == [kept.id]
        every = await harness.backend.list_preferences(
            include_superseded=True, user_identifier=user
        )
        [still] = [p for p in every if p.id == old.id]
        assert (still.superseded_at, still.superseded_by) == (marked.superseded_at, None)
        if linked:
            assert await harness.backend.delete_entity(linked[0]) is True
            [read] = await harness.backend.list_preferences(user_identifier=user)
            assert read.linked_entities == []

    @scenario(
        "preferences.user_scoped",
        "one user's preferences are never listed, found, superseded or deleted for another",
        requires="preferences",
    )
    async def test_preferences_user_scoped(self, harness: Harness) -> None:
        alice, bob = harness.new_user(), harness.new_user()
        key = word()
        mine = await harness.add_preference("food", f"likes {key}", user=alice)
        theirs = await harness.add_preference("food", f"likes {key}", user=bob)
        assert _ids(await harness.backend.list_preferences(user_identifier=bob)) == [theirs.id]
        hits = await harness.backend.search_preferences(key, user_identifier=bob)
        assert _ids(hits) == [theirs.id]
        assert await harness.backend.delete_preference(mine.id, user_identifier=bob) is False
        with pytest.raises(NotFoundError):
            await harness.backend.supersede_preference(mine.id, theirs.id, user_identifier=bob)
        assert _ids(await harness.backend.list_preferences(user_identifier=alice)) == [mine.id]

    @scenario(
        "preferences.bad_input",
        "bad preference arguments raise errors naming them and write nothing",
        requires="preferences",
    )
    async def test_preferences_bad_input(self, harness: Harness) -> None:
        user = harness.new_user()
        add = harness.backend.add_preference
        with invalid("confidence"):
            await add("food", "x", confidence=1.5, user_identifier=user)
        with invalid("category"):
            await add("", "x", user_identifier=user)
        with invalid("preference"):
            await add("food", "  ", user_identifier=user)
        with invalid("context", InvalidArgumentTypeError):
            await add("food", "x", context=3, user_identifier=user)  # type: ignore[arg-type]
        with invalid("linked_entities", InvalidArgumentTypeError):
            await add("food", "x", linked_entities="e1", user_identifier=user)
        with invalid("metadata"):
            await add("food", "x", metadata={"x": float("nan")}, user_identifier=user)
        with pytest.raises(NotFoundError) as info:
            await add("food", "x", linked_entities=[word()], user_identifier=user)
        assert info.value.argument == "linked_entities"
        assert await harness.backend.list_preferences(user_identifier=user) == []


class FactsSuite(SuiteBase):
    """Scenarios of area ``facts``."""

    @scenario(
        "facts.round_trip",
        "a fact reads back exactly, facts_about finds it by subject ignoring case and by "
        "predicate, newest first",
        requires="facts",
    )
    async def test_facts_round_trip(self, harness: Harness) -> None:
        user = harness.new_user()
        subject = f"Ada {word()} {ODD}"
        start = datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
        made = await harness.add_fact(
            subject,
            "WORKS_AT",
            f"Acme {ODD}",
            user=user,
            confidence=0.5,
            valid_from=start,
            valid_until=start + timedelta(days=400),
            source_message_id="m-1",
            metadata={"k": ODD},
        )
        later = await harness.add_fact(subject, "LIVES_IN", "Paris", user=user)
        about = await harness.backend.facts_about(subject.upper(), user_identifier=user)
        assert _ids(about) == [later.id, made.id]
        read = about[1]
        assert read.as_triple == (subject, "WORKS_AT", f"Acme {ODD}")
        assert (read.confidence, read.valid_from, read.valid_until) == (
            0.5,
            start,
            start + timedelta(days=400),
        )
        assert (read.source_message_id, read.user_identifier) == ("m-1", user)
        same_json(read.metadata, {"k": ODD})
        works = await harness.backend.facts_about(
            subject, predicate="WORKS_AT", user_identifier=user
        )
        assert _ids(works) == [made.id]

    @scenario(
        "facts.validity",
        "as_of keeps the facts valid at that instant: valid_from included, valid_until "
        "excluded, an open bound unbounded",
        requires="facts",
    )
    async def test_facts_validity(self, harness: Harness) -> None:
        user = harness.new_user()
        subject, key = word(), word()
        t = datetime(2024, 6, 1, tzinfo=UTC)
        old = await harness.add_fact(subject, "ROLE", f"intern {key}", user=user, valid_until=t)
        now = await harness.add_fact(subject, "ROLE", f"engineer {key}", user=user, valid_from=t)
        always = await harness.add_fact(subject, "NAME", f"ada {key}", user=user)

        async def valid(moment: datetime) -> set[str]:
            about = await harness.backend.facts_about(subject, as_of=moment, user_identifier=user)
            found = await harness.backend.search_facts(key, as_of=moment, user_identifier=user)
            assert set(_ids(found)) == set(_ids(about)), "search_facts and facts_about differ"
            return set(_ids(about))

        assert await valid(t - timedelta(microseconds=1)) == {old.id, always.id}
        assert await valid(t) == {now.id, always.id}
        every = await harness.backend.facts_about(subject, user_identifier=user)
        assert set(_ids(every)) == {old.id, now.id, always.id}
        with invalid("valid_until"):
            await harness.backend.add_fact(
                subject, "ROLE", "x", valid_from=t, valid_until=t, user_identifier=user
            )

    @scenario(
        "facts.search_and_delete",
        "search_facts finds words of subject, predicate or object with scores, best first; "
        "delete_fact removes one (True, then False)",
        requires="facts",
    )
    async def test_facts_search_and_delete(self, harness: Harness) -> None:
        user = harness.new_user()
        a, b = word(), word()
        both = await harness.add_fact(a, "KNOWS", b, user=user)
        one = await harness.add_fact(word(), "LIKES", a, user=user)
        hits = await harness.backend.search_facts(f"{a} {b}", user_identifier=user)
        assert _ids(hits) == [both.id, one.id]
        assert all(h.score is not None and 0 < h.score <= 1 for h in hits)
        by_predicate = await harness.backend.search_facts("likes", user_identifier=user)
        assert _ids(by_predicate) == [one.id]
        assert await harness.backend.delete_fact(both.id, user_identifier=user) is True
        assert await harness.backend.delete_fact(both.id, user_identifier=user) is False
        assert _ids(await harness.backend.search_facts(a, user_identifier=user)) == [one.id]

    @scenario(
        "facts.user_scoped",
        "one user's facts are never found or deleted for another",
        requires="facts",
    )
    async def test_facts_user_scoped(self, harness: Harness) -> None:
        alice, bob = harness.new_user(), harness.new_user()
        subject = word()
        mine = await harness.add_fact(subject, "IS", "secret", user=alice)
        assert await harness.backend.facts_about(subject, user_identifier=bob) == []
        assert await harness.backend.search_facts(subject, user_identifier=bob) == []
        assert await harness.backend.delete_fact(mine.id, user_identifier=bob) is False
        assert _ids(await harness.backend.facts_about(subject, user_identifier=alice)) == [mine.id]


class RelationshipsSuite(SuiteBase):
    """Scenarios of area ``relationships``."""

    async def _people(self, harness: Harness, count: int) -> list[str]:
        return [(await harness.add_entity(word().capitalize(), "PERSON")).id for _ in range(count)]

    @scenario(
        "relationships.add_and_list",
        "add_relationship links two entities (type stored upper-case, properties exact); "
        "adding it again returns the same one; list_relationships honours direction and type",
        requires=("relationships", "entity_graph"),
    )
    async def test_relationships_add_and_list(self, harness: Harness) -> None:
        a, b, c = await self._people(harness, 3)
        props = {"since": 2020, "note": ODD}
        ab = await harness.backend.add_relationship(a, b, "knows", properties=props)
        assert (ab.source_id, ab.target_id, ab.type) == (a, b, "KNOWS")
        same_json(ab.properties, props)
        again = await harness.backend.add_relationship(a, b, "KNOWS", properties={"x": 1})
        assert again.id == ab.id
        same_json(again.properties, props)
        ca = await harness.backend.add_relationship(c, a, "MANAGES")
        assert _ids(await harness.backend.list_relationships(a)) == [ab.id, ca.id]
        assert _ids(await harness.backend.list_relationships(a, direction="out")) == [ab.id]
        assert _ids(await harness.backend.list_relationships(a, direction="in")) == [ca.id]
        assert _ids(await harness.backend.list_relationships(a, type="manages")) == [ca.id]
        [listed] = await harness.backend.list_relationships(b)
        same_json(listed.properties, props)

    @scenario(
        "relationships.traversal",
        "related_entities walks both directions to the depth asked, each entity once, "
        "nearest first, never the start, through cycles, filtered by type",
        requires="entity_graph",
    )
    async def test_relationships_traversal(self, harness: Harness) -> None:
        a, b, c, d, e = await self._people(harness, 5)
        add = harness.link
        await add(a, b, "KNOWS")
        await add(b, c, "KNOWS")
        await add(c, d, "KNOWS")
        await add(d, a, "KNOWS")  # a cycle
        await add(e, a, "WORKS_WITH")

        async def near(depth: int, types: list[str] | None = None) -> list[str]:
            found = await harness.backend.related_entities(a, depth=depth, types=types)
            return [x.id for x in found]

        first = await near(1)
        assert set(first) == {b, d, e} and len(first) == 3
        second = await near(2)
        assert set(second[:3]) == {b, d, e} and second[3:] == [c]
        assert set(await near(3)) == {b, c, d, e}
        assert set(await near(1, ["KNOWS"])) == {b, d}
        assert await near(1, ["works_with"]) == [e]
        with invalid("depth"):
            await harness.backend.related_entities(a, depth=4)

    @scenario(
        "relationships.delete",
        "delete_relationship removes one (True, then False); deleting an entity removes "
        "its relationships",
        requires=("relationships", "entity_graph", "delete_entity"),
    )
    async def test_relationships_delete(self, harness: Harness) -> None:
        a, b, c = await self._people(harness, 3)
        ab = await harness.backend.add_relationship(a, b, "KNOWS")
        await harness.backend.add_relationship(a, c, "KNOWS")
        assert await harness.backend.delete_relationship(ab.id) is True
        assert await harness.backend.delete_relationship(ab.id) is False
        assert [x.id for x in await harness.backend.related_entities(a)] == [c]
        assert await harness.backend.delete_entity(c) is True
        assert await harness.backend.list_relationships(a) == []

    @scenario(
        "relationships.unknown_entity",
        "a relationship to an entity that does not exist raises NotFoundError naming the "
        "argument and writes nothing",
        requires=("relationships", "entity_graph"),
    )
    async def test_relationships_unknown_entity(self, harness: Harness) -> None:
        [a] = await self._people(harness, 1)
        for argument, pair in (("source_id", (word(), a)), ("target_id", (a, word()))):
            with pytest.raises(NotFoundError) as info:
                await harness.backend.add_relationship(*pair, "KNOWS")
            assert info.value.argument == argument
        assert await harness.backend.list_relationships(a) == []
        with pytest.raises(NotFoundError):
            await harness.backend.related_entities(word())
        with invalid("type"):
            await harness.backend.add_relationship(a, a, "not a type")

    @scenario(
        "relationships.reads",
        "list_relationships returns an entity's relationships oldest first with their "
        "type and properties, by direction and type; reading an unknown entity raises "
        "NotFoundError naming entity_id",
        requires="entity_graph",
    )
    async def test_relationships_reads(self, harness: Harness) -> None:
        a, b, c = await self._people(harness, 3)
        props = {"since": 2020, "note": ODD}
        ab = await harness.link(a, b, "KNOWS", properties=props)
        ca = await harness.link(c, a, "MANAGES")
        listed = await harness.backend.list_relationships(a)
        assert _ids(listed) == [ab.id, ca.id]
        assert [(r.source_id, r.type, r.target_id) for r in listed] == [
            (a, "KNOWS", b),
            (c, "MANAGES", a),
        ]
        same_json(listed[0].properties, props)
        assert _ids(await harness.backend.list_relationships(a, direction="out")) == [ab.id]
        assert _ids(await harness.backend.list_relationships(a, direction="in")) == [ca.id]
        assert _ids(await harness.backend.list_relationships(a, type="manages")) == [ca.id]
        assert _ids(await harness.backend.list_relationships(a, limit=1)) == [ab.id]
        assert _ids(await harness.backend.list_relationships(b)) == [ab.id]
        for read in (harness.backend.list_relationships, harness.backend.related_entities):
            with pytest.raises(NotFoundError) as info:
                await read(word())
            assert info.value.argument == "entity_id"


class EntitySearchSuite(SuiteBase):
    """Scenarios of area ``entity_search``."""

    @scenario(
        "entity_search.words",
        "search_entities finds a word of an entity's name or description, best first with "
        "scores, honours type and limit",
        requires="entity_search",
    )
    async def test_entity_search_words(self, harness: Harness) -> None:
        key = word()
        named = await harness.add_entity(f"{key.capitalize()} Labs", "ORGANIZATION")
        described = await harness.add_entity(
            word().capitalize(), "PERSON", description=f"works at {key} labs"
        )
        hits = await harness.backend.search_entities(key)
        assert set(_ids(hits)) == {named.id, described.id}
        assert all(h.score is not None and 0 < h.score <= 1 for h in hits)
        people = await harness.backend.search_entities(key, type="person")
        assert _ids(people) == [described.id]
        assert len(await harness.backend.search_entities(key, limit=1)) == 1
        assert await harness.backend.search_entities(word()) == []


class LongTermErasureSuite(SuiteBase):
    """The ``erasure`` scenarios of long-term memory."""

    @scenario(
        "erasure.long_term",
        "forget_user removes the user's preferences and facts, counts them, and leaves "
        "another user's untouched",
        requires=("user_erasure", "preferences", "facts"),
    )
    async def test_erasure_long_term(self, harness: Harness) -> None:
        alice, bob = harness.new_user(), harness.new_user()
        key = word()
        await harness.add_preference("food", f"likes {key}", user=alice)
        await harness.add_preference("music", f"plays {key}", user=alice)
        await harness.add_fact(key, "IS", "secret", user=alice)
        kept = await harness.add_preference("food", f"likes {key}", user=bob)
        kept_fact = await harness.add_fact(key, "IS", "public", user=bob)
        report = await harness.backend.forget_user(alice)
        assert (report.counts["preferences"], report.counts["facts"]) == (2, 1), report.counts
        assert await harness.backend.list_preferences(user_identifier=alice) == []
        assert await harness.backend.search_preferences(key, user_identifier=alice) == []
        assert await harness.backend.facts_about(key, user_identifier=alice) == []
        assert _ids(await harness.backend.list_preferences(user_identifier=bob)) == [kept.id]
        assert _ids(await harness.backend.facts_about(key, user_identifier=bob)) == [kept_fact.id]
        again = await harness.backend.forget_user(alice)
        assert (again.counts["preferences"], again.counts["facts"]) == (0, 0)

    @scenario(
        "erasure.entity_another_user_links",
        "on a store whose entities are shared, forget_user keeps an entity only the "
        "forgotten user's messages mention when another user's preference links it (and "
        "deletes one nothing else holds)",
        requires=("user_erasure", "preferences", "explicit_mentions", "entities"),
    )
    async def test_erasure_entity_another_user_links(self, harness: Harness) -> None:
        if harness.backend.multi_tenant:
            pytest.skip(f"{NOT_APPLICABLE}a multi-tenant store's entities are the tenant's")
        alice, bob = harness.new_user(), harness.new_user()
        linked, alone = f"Linked{word()}", f"Alone{word()}"
        handle = await harness.new_session(user=alice, create=True)
        entity = await harness.add_entity(linked, "PERSON")  # deleted at clean-up
        await harness.backend.add_message(
            handle,
            "user",
            f"{linked} and {alone}",
            extraction_mode="explicit",
            explicit_mentions=[
                EntityRef(name=linked, type="PERSON"),
                EntityRef(name=alone, type="PERSON"),
            ],
        )
        kept = await harness.add_preference("food", "tea", user=bob, linked_entities=[entity.id])
        preview = None
        if harness.caps.store_stats:
            preview = await harness.backend.forget_user(alice, dry_run=True)
        report = await harness.backend.forget_user(alice)
        if preview is not None:
            assert preview.counts.get("entities") == report.counts.get("entities") == 1, (
                f"the dry run said {preview.counts}, the erasure {report.counts}"
            )
        assert [e.id for e in await harness.backend.find_entities(linked)] == [entity.id]
        assert await harness.backend.find_entities(alone) == [], "an orphan entity was kept"
        [after] = await harness.backend.list_preferences(user_identifier=bob)
        assert (after.id, after.linked_entities) == (kept.id, [entity.id])

    @scenario(
        "erasure.dry_run_counts_linked_entities",
        "forget_user(dry_run=True) counts the entities the erasure deletes when the user's "
        "own preference or a relationship to another entity links them too",
        requires=(
            "user_erasure",
            "store_stats",
            "preferences",
            "relationships",
            "explicit_mentions",
            "entities",
        ),
    )
    async def test_erasure_dry_run_counts_linked_entities(self, harness: Harness) -> None:
        alice = harness.new_user()
        liked, linked = f"Liked{word()}", f"Linked{word()}"
        owner = alice if harness.backend.multi_tenant else None
        handle = await harness.new_session(user=alice, create=True)
        harness.allow_entities()
        await harness.backend.add_message(
            handle,
            "user",
            f"{liked} and {linked}",
            extraction_mode="explicit",
            explicit_mentions=[
                EntityRef(name=liked, type="PERSON"),
                EntityRef(name=linked, type="PERSON"),
            ],
            user_identifier=owner,
        )
        [a] = await harness.backend.find_entities(liked, user_identifier=owner)
        [b] = await harness.backend.find_entities(linked, user_identifier=owner)
        other = await harness.add_entity(f"Other{word()}", "PERSON", user_identifier=owner)
        await harness.add_preference("food", "tea", user=alice, linked_entities=[a.id])
        await harness.backend.add_relationship(b.id, other.id, "KNOWS", user_identifier=owner)
        preview = await harness.backend.forget_user(alice, dry_run=True)
        report = await harness.backend.forget_user(alice)
        assert await harness.backend.find_entities(liked, user_identifier=owner) == []
        assert await harness.backend.find_entities(linked, user_identifier=owner) == []
        assert preview.counts.get("entities") == report.counts.get("entities"), (
            f"the dry run said {preview.counts}, the erasure {report.counts}"
        )


class LongTermContextSuite(SuiteBase):
    """The ``context`` scenario of long-term memory."""

    @scenario(
        "context.long_term",
        "get_context starts with the user's preferences and the facts valid now about the "
        "entities the recent messages mention, never another user's, within "
        "long_term_chars (0: none)",
        requires=("preferences", "facts", "explicit_mentions", "entities"),
    )
    async def test_context_long_term(self, harness: Harness) -> None:
        alice, bob = harness.new_user(), harness.new_user()
        name, key = word().capitalize(), word()
        handle = await harness.new_session(user=alice, create=True)
        await harness.add_preference("food", f"likes {key}", user=alice, context="at dinner")
        await harness.add_preference("food", f"hates {key}", user=bob)
        await harness.add_fact(name, "WORKS_AT", "Acme", user=alice)
        await harness.add_fact(name, "WORKED_AT", "OldCo", user=alice, valid_until="2001-01-01")
        await harness.add_fact(name, "IS", "bob's secret", user=bob)
        harness.allow_entities()
        await harness.backend.add_message(
            handle,
            "user",
            f"I met {name}",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name=name, type="PERSON")],
            user_identifier=alice if harness.caps.user_scoped_calls else None,
        )
        scope: dict[str, Any] = {"user_identifier": alice} if harness.caps.user_scoped_calls else {}
        text = await harness.backend.get_context(session_id=handle, **scope)
        assert text.startswith(
            f"## Preferences\n- [food] likes {key} (at dinner)\n\n"
            f"## Facts\n- {name} WORKS_AT Acme\n\n## Recent messages\n"
        ), text
        assert "hates" not in text and "secret" not in text and "OldCo" not in text
        bare = await harness.backend.get_context(session_id=handle, long_term_chars=0, **scope)
        assert bare.startswith("## Recent messages"), bare
        facts = f"## Facts\n- {name} WORKS_AT Acme\n"  # fits; the preferences need more
        small = await harness.backend.get_context(
            session_id=handle, long_term_chars=len(facts), **scope
        )
        assert small.startswith(f"{facts}\n## Recent messages"), small
        none = await harness.backend.get_context(
            session_id=handle, long_term_chars=len(facts) - 1, **scope
        )
        assert none.startswith("## Recent messages"), none


class LongTermTenancySuite(SuiteBase):
    """The ``tenancy`` scenario of relationships."""

    @scenario(
        "tenancy.relationships_isolated",
        "with multi_tenant=True one user can neither link, list nor traverse another "
        "user's entities, nor delete their relationships",
        requires=("multi_tenant", "relationships", "delete_entity"),
    )
    async def test_tenancy_relationships_isolated(self, harness: Harness) -> None:
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        a = await harness.add_entity(
            word().capitalize(), "PERSON", backend=backend, user_identifier=alice
        )
        b = await harness.add_entity(
            word().capitalize(), "PERSON", backend=backend, user_identifier=alice
        )
        mine = await harness.add_entity(
            word().capitalize(), "PERSON", backend=backend, user_identifier=bob
        )
        link = await backend.add_relationship(a.id, b.id, "KNOWS", user_identifier=alice)
        with pytest.raises(NotFoundError):
            await backend.add_relationship(mine.id, a.id, "KNOWS", user_identifier=bob)
        with pytest.raises(NotFoundError):
            await backend.list_relationships(a.id, user_identifier=bob)
        with pytest.raises(NotFoundError):
            await backend.related_entities(a.id, user_identifier=bob)
        assert await backend.delete_relationship(link.id, user_identifier=bob) is False
        if backend.capabilities.entity_search:
            assert await backend.search_entities(a.name, user_identifier=bob) == []
        related = await backend.related_entities(a.id, user_identifier=alice)
        assert [e.id for e in related] == [b.id]
