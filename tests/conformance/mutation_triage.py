"""Sort the mutants that survived ``mutmut run`` into classes, for conformance/MUTATION.md.

Run after ``python -m mutmut run`` (see memory_core/conformance/README.md, "Mutation score")::

    python -m tests.conformance.mutation_triage > /tmp/triage.md

Survivors whose change the contract cannot observe are classified automatically:

* ``case-only``: a string with only its letter case changed: SQL keywords and the keys
  of ``sqlite3.Row`` are case-insensitive;
* ``message``: the text of an error message (messages are free text; the type and
  ``argument`` of errors are what the contract fixes, and the suite checks those).

Everything else is listed with its diff under ``review`` for a human to triage: either
an equivalent mutant (say why) or a missing scenario (add it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

_STATUS = re.compile(r"^\s+(\S+): (.+)$")

# Survivors triaged by hand (on the commit recorded in memory_core/conformance/README.md): a pattern
# of mutant names and why no conformance scenario can or should kill them. Names are
# mutmut's ``<module>.x_<function>__mutmut_<n>``, relative to ``memory_core.backends.embedded``.
REASONS: list[tuple[str, str]] = [
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


def _mutmut(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", *args], capture_output=True, text=True, check=False
    )
    return done.stdout


def statuses() -> dict[str, str]:
    """Every mutant name with its status (``killed``, ``survived``, ``no tests`` …)."""
    found = {}
    for line in _mutmut("results", "--all", "true").splitlines():
        match = _STATUS.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _diff(name: str) -> str:
    """The diff of one mutant (mutmut's own ``show``, in-process: much faster)."""
    try:
        from mutmut.__main__ import find_mutant, get_diff_for_mutant
    except ImportError:  # another mutmut version: ask the command
        return _mutmut("show", name)
    return str(get_diff_for_mutant(name, path=find_mutant(name).path))


def _changed(diff: str) -> tuple[list[str], list[str], list[str]]:
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++", "@@", "#"))]
    removed = [line[1:] for line in body if line.startswith("-")]
    added = [line[1:] for line in body if line.startswith("+")]
    return body, removed, added


def _statement_start(body: list[str], index: int) -> str:
    """The first line of the statement the line at ``index`` belongs to (walking up
    through continuation lines)."""
    while index > 0:
        above = body[index - 1][1:].rstrip()
        if above.endswith(("(", ",", "[", "{")) or body[index][1:].lstrip().startswith(
            ('"', "f'", 'f"', "'", ")")
        ):
            index -= 1
            continue
        break
    return body[index][1:].strip()


def reason_for(name: str) -> str | None:
    """The hand triage of a survivor, if it has one."""
    short = name.removeprefix("memory_core.backends.embedded.")
    return next((why for pattern, why in REASONS if re.search(pattern, short)), None)


def classify(diff: str) -> str:
    """``case-only``, ``message`` or ``review`` for one survivor's diff."""
    body, removed, added = _changed(diff)
    if removed and [r.lower() for r in removed] == [a.lower() for a in added]:
        return "case-only"
    index = next((i for i, line in enumerate(body) if line.startswith("-")), None)
    if index is not None:
        start = _statement_start(body, index)
        line = body[index]
        if start.startswith("raise ") or "Error(" in start or "Error(" in line:
            return "message"
    return "review"


def main() -> int:
    every = statuses()
    counts: dict[str, int] = defaultdict(int)
    for status in every.values():
        counts[status] += 1
    survivors = sorted(name for name, status in every.items() if status == "survived")
    classes: dict[str, list[tuple[str, str]]] = defaultdict(list)
    triaged: dict[str, list[str]] = defaultdict(list)
    for name in survivors:
        diff = _diff(name)
        kind = classify(diff)
        why = reason_for(name) if kind == "review" else None
        if why is not None:
            triaged[why].append(name)
        else:
            classes[kind].append((name, diff))
    killed = counts.get("killed", 0)
    scored = killed + counts.get("survived", 0) + counts.get("timeout", 0)
    print(f"mutants: {len(every)}; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    if scored:
        print(f"score: {killed + counts.get('timeout', 0)}/{scored} killed or timed out")
    print(f"\n## triaged by hand: {sum(len(v) for v in triaged.values())}\n")
    for why, names in triaged.items():
        print(f"- {len(names)}: {why}")
    for kind in ("case-only", "message", "review"):
        print(f"\n## {kind}: {len(classes[kind])}\n")
        for name, diff in classes[kind]:
            if kind == "review":
                print(f"### {name}\n\n```diff\n{diff.strip()}\n```\n")
            else:
                print(f"- {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
