"""Identifier extraction: what the bounded retrieval of a turn looks up."""

from __future__ import annotations

import pytest

from memory_core import InvalidRequestError
from memory_core.models import Entity
from memory_core.turns import MAX_IDENTIFIERS, cited_entities, extract_identifiers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, what do you know about Acme Corp?", ["Acme Corp"]),
        (
            "Is Bank of America the same as Johnson & Johnson?",
            ["Bank of America", "Johnson & Johnson"],
        ),
        ("Yesterday Alice met Bob.", ["Alice", "Bob"]),
        ("Émile Zola lived near Zürich", ["Émile Zola", "Zürich"]),
        ("Ask Dr. Watson about J. R. R. Tolkien", ["Dr. Watson", "J. R. R. Tolkien"]),
        ("Alice's cat and Acme Corp.", ["Alice", "Acme Corp"]),
        ("see ORD-1234, ticket #123 and SKU42", ["ORD-1234", "#123", "SKU42"]),
        ("mail alice@example.com now", ["alice@example.com"]),
        (
            "id 123e4567-e89b-12d3-a456-426614174000 please",
            ["123e4567-e89b-12d3-a456-426614174000"],
        ),
        ('find "the blue project" and \u2018Phoenix\u2019', ["the blue project", "Phoenix"]),
        ("it's 'zeta' isn't it", ["zeta"]),
        ("`build-7` failed", ["build-7"]),
    ],
)
def test_finds_identifiers_in_order(text: str, expected: list[str]) -> None:
    assert extract_identifiers(text) == expected


def test_plain_words_numbers_and_greetings_are_not_identifiers() -> None:
    assert extract_identifiers("ok yes thanks, 10K at 3pm on 2024-01-05 v2") == []
    assert extract_identifiers("Hello") == []
    assert extract_identifiers("") == []


def test_ids_inside_emails_and_codes_are_not_split_into_names() -> None:
    found = extract_identifiers("write to Bob.Smith@Example.com about ORD-99")
    assert found == ["Bob.Smith@Example.com", "ORD-99"]


def test_deduplicated_ignoring_case_keeping_first_spelling() -> None:
    found = extract_identifiers('"acme corp" then Acme Corp, later ORD-1 and ord-1')
    assert found == ["acme corp", "ORD-1"]


def test_bounded_to_sixteen_by_default_in_order_of_appearance() -> None:
    text = " ".join(f'"name {i}"' for i in range(40))
    found = extract_identifiers(text)
    assert len(found) == MAX_IDENTIFIERS == 16
    assert found == [f"name {i}" for i in range(16)]


def test_bound_counts_unique_identifiers() -> None:
    text = '"a1" "A1" "b2" "B2" "c3"'
    assert extract_identifiers(text, max_identifiers=2) == ["a1", "b2"]


def test_overlong_quoted_text_is_not_an_identifier() -> None:
    assert extract_identifiers('"' + "x" * 500 + '" and ORD-7') == ["ORD-7"]


def test_never_raises_on_odd_text() -> None:
    odd = "\x00\t\n\"'`\u201c\u2018#@" * 200 + "\U0001f468\u200d\U0001f469 Ünïcödé"
    assert isinstance(extract_identifiers(odd), list)


def test_bad_arguments_name_the_argument() -> None:
    with pytest.raises(InvalidRequestError) as info:
        extract_identifiers("x", max_identifiers=0)
    assert info.value.argument == "max_identifiers"
    with pytest.raises(TypeError):
        extract_identifiers(b"bytes")  # type: ignore[arg-type]


def test_cited_entities_match_whole_names_ignoring_case() -> None:
    acme = Entity(id="e1", name="Acme Corp", type="ORGANIZATION")
    ann = Entity(id="e2", name="Ann", type="PERSON")
    order = Entity(id="ORD-7", name="order seven", type="OBJECT")
    cited = cited_entities([acme, ann, order], "ACME CORP called Annabel about ORD-7.")
    assert cited == [acme, order]
