"""The documented promises map to scenarios (package data), and the documentation makes
exactly the promises the package lists."""

from __future__ import annotations

import re
from pathlib import Path

from memory_core.conformance.catalog import main
from memory_core.conformance.promises import GROUPS, PROMISES, SECTION, problems
from memory_core.conformance.suite import all_scenarios

# The page that makes the promises (the site's "Where memory-core differs").
DIFFERENCES = Path(__file__).resolve().parents[2] / "docs" / "differences.md"
_BOLD_BULLET = re.compile(r"^- \*\*(.+?)\*\*")


def documented_promises(text: str) -> list[tuple[str, str]]:
    """``(group, lead)`` of every bold-led bullet of the section, in document order; the
    group is the bold paragraph above the bullets (``Every backend``, ...)."""
    found: list[tuple[str, str]] = []
    inside, group = False, ""
    for line in text.splitlines():
        if line.startswith("#"):
            inside = line.lstrip("#").strip() == SECTION
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


SAMPLE = f"""# title

## {SECTION}

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
    assert documented_promises(SAMPLE) == [
        ("Every backend", "Order is a per-conversation sequence number"),
        ("Every backend", "A brand-new promise"),
        ("Embedded and Bolt", "Mentions"),
    ]


def test_an_unmapped_promise_is_a_problem() -> None:
    leads = [lead for _, lead in documented_promises(SAMPLE)]
    found = problems(leads, set(all_scenarios()))
    assert any("'A brand-new promise' maps to no scenario" in p for p in found), found
    # every mapped promise the sample lacks is reported as stale too
    assert any("no longer has" in p for p in found)


def test_an_unknown_scenario_is_a_problem() -> None:
    known = set(all_scenarios()) - {"search.score_scale"}
    assert problems(list(PROMISES), known) == [
        "promise '`search_messages`': unknown scenario 'search.score_scale'"
    ]


def test_the_documentation_makes_exactly_the_listed_promises() -> None:
    documented = documented_promises(DIFFERENCES.read_text(encoding="utf-8"))
    assert len(documented) >= 15
    assert problems([lead for _, lead in documented], set(all_scenarios())) == []
    assert dict((lead, group) for group, lead in documented) == GROUPS
    assert main(["--check"]) == 0
