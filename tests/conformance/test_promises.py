"""The README's promises map to scenarios, and the check notices one that does not."""

from __future__ import annotations

from conformance.catalog import main
from conformance.promises import PROMISES, README, SECTION, problems, readme_promises
from conformance.scenarios import all_scenarios

SAMPLE = f"""# title

{SECTION}

Intro with **bold** words that are not bullets.

**Every backend**
- **Order is a per-conversation sequence number**, not a timestamp.
- plain bullet without a promise
- **A brand-new promise** nobody mapped.

**Embedded and Bolt**
- **Mentions** (explicit): linked.

## Next section
- **Not a promise** of that section.
"""


def test_bold_led_bullets_of_the_section_are_the_promises() -> None:
    assert readme_promises(SAMPLE) == [
        ("Every backend", "Order is a per-conversation sequence number"),
        ("Every backend", "A brand-new promise"),
        ("Embedded and Bolt", "Mentions"),
    ]


def test_an_unmapped_promise_is_a_problem() -> None:
    found = problems(readme_promises(SAMPLE), set(all_scenarios()))
    assert any("'A brand-new promise' maps to no scenario" in p for p in found), found
    # every mapped promise the sample lacks is reported as stale too
    assert any("no longer has" in p for p in found)


def test_an_unknown_scenario_is_a_problem() -> None:
    leads = [("", lead) for lead in PROMISES]
    known = set(all_scenarios()) - {"search.score_scale"}
    assert problems(leads, known) == [
        "promise '`search_messages`': unknown scenario 'search.score_scale'"
    ]


def test_the_readme_promises_all_map_to_scenarios() -> None:
    promises = readme_promises(README.read_text(encoding="utf-8"))
    assert len(promises) >= 15
    assert problems(promises, set(all_scenarios())) == []
    assert main(["--check"]) == 0
