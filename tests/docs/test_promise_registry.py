"""Every promise sentence of the hand-written docs is in tests/docs/promises.toml with the
tests that guard it (or a waiver), and every guard it names exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.conformance.suite import all_scenarios
from tests.docs.promises import (
    REGISTRY,
    ROOT,
    Entry,
    Known,
    documented,
    load,
    pages,
    problems,
    promise_sentences,
)

SAMPLE = """# A page

Plain description of a feature. Reads **never** block the loop, e.g. on a slow disk.
Another sentence, a plain one.

- Every write is stored once;
  a continuation line of the same item.
- An item with no promise.
- **A bold lead** opens a documented rule. Its second sentence is plain.

| column | column |
| --- | --- |
| a row that must hold | yes |
| **bold row** | plain |

```python
assert "this never counts"  # code
```

<!-- include: RELIABILITY.md -->
<!-- table:start -->
| generated | always |
<!-- table:end -->

**Every backend**

See [the limits](limits.md#sizes): an oversized value is refused.
"""


def test_promise_sentences_are_found_by_their_wording() -> None:
    assert promise_sentences(SAMPLE) == [
        "Reads **never** block the loop, e.g. on a slow disk.",
        "Every write is stored once; a continuation line of the same item.",
        "**A bold lead** opens a documented rule.",
        "a row that must hold | yes",
        "See the limits: an oversized value is refused.",
    ]


def known() -> Known:
    return Known(set(all_scenarios()))


def test_an_unregistered_sentence_names_its_page_and_how_to_fix_it() -> None:
    found = problems({"docs/x.md": ["Writes never fail."]}, [], known())
    assert len(found) == 1
    assert found[0].startswith("docs/x.md: promise sentence 'Writes never fail.'")
    assert "add a [[promise]] entry" in found[0]


def test_an_entry_whose_sentence_is_gone_is_a_problem() -> None:
    entry = Entry("docs/x.md", "Writes never fail.", guards=("writes.add_returns_message",))
    found = problems({"docs/x.md": []}, [entry], known())
    assert found == [
        "docs/x.md: tests/docs/promises.toml lists 'Writes never fail.', which the page no "
        "longer has: update the entry to the sentence as it now reads, or remove it"
    ]


def test_a_registered_sentence_is_matched_after_normalising() -> None:
    entry = Entry("p.md", "See [it](a.md):  never\n  twice.", guards=("reads.oldest_first",))
    assert problems({"p.md": ["See it: never twice."]}, [entry], known()) == []


@pytest.mark.parametrize(
    ("guard", "words"),
    [
        ("reads.no_such_scenario", "neither a conformance scenario id"),
        ("tests/docs/no_such_file.py::test_x", "there is no file tests/docs/no_such_file.py"),
        ("tests/docs/test_promise_registry.py::test_nothing", "defines no test_nothing"),
        ("tests/docs/test_snippets.py::Nope::test_x", "defines no Nope::test_x"),
    ],
)
def test_a_guard_that_does_not_exist_is_a_problem(guard: str, words: str) -> None:
    entry = Entry("p.md", "It never fails.", guards=(guard,))
    found = problems({"p.md": ["It never fails."]}, [entry], known())
    assert len(found) == 1 and words in found[0], found
    assert found[0].startswith("p.md: 'It never fails.'")


def test_existing_guards_are_accepted() -> None:
    guards = (
        "reads.oldest_first",
        "tests/docs/test_promise_registry.py::test_existing_guards_are_accepted",
    )
    entry = Entry("p.md", "It never fails.", guards=guards)
    assert problems({"p.md": ["It never fails."]}, [entry], known()) == []


@pytest.mark.parametrize(
    "entry",
    [
        Entry("p.md", "It never fails."),
        Entry("p.md", "It never fails.", guards=("reads.oldest_first",), waived="advice"),
        Entry("p.md", "It never fails.", waived="advice", weak="partly"),
    ],
)
def test_an_entry_has_exactly_one_status(entry: Entry) -> None:
    found = problems({"p.md": ["It never fails."]}, [entry], known())
    assert [p for p in found if "exactly one of guards" in p or "weak but names no guards" in p], (
        found
    )


def test_a_sentence_registered_twice_is_a_problem() -> None:
    entry = Entry("p.md", "It never fails.", waived="advice")
    found = problems({"p.md": ["It never fails."]}, [entry, entry], known())
    assert found == ["p.md: 'It never fails.' is registered twice"]


def test_the_registry_reads_toml() -> None:
    text = '[[promise]]\npage = "p.md"\nsentence = "It never fails."\nguards = ["a.b"]\n'
    assert load(text) == [Entry("p.md", "It never fails.", guards=("a.b",))]


def test_the_pages_are_the_hand_written_ones() -> None:
    found = pages()
    assert "README.md" in found and "docs/differences.md" in found
    assert "docs/frameworks/langchain.md" in found
    assert "docs/benchmarks.md" not in found  # measurements
    # pages that only include another file have no sentences of their own
    assert documented()["docs/reliability.md"] == []


def test_every_promise_sentence_of_the_docs_is_registered_and_guarded() -> None:
    entries = load(REGISTRY.read_text(encoding="utf-8"))
    found = problems(documented(), entries, Known(set(all_scenarios()), ROOT))
    assert not found, "\n".join(found)


def test_the_registry_is_not_read_at_runtime() -> None:
    package = ROOT / "memory_core"
    readers = [
        path
        for path in package.rglob("*.py")
        if "promises.toml" in path.read_text(encoding="utf-8")
    ]
    assert readers == [], readers
    assert Path(REGISTRY).parent == ROOT / "tests" / "docs"
