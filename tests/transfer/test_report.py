"""The transfer report's two forms, exactly: ``as_dict`` (the CLI's ``--json``, a machine
contract) and ``summary`` (what the CLI prints), with every section filled."""

from __future__ import annotations

import json

from memory_core.transfer import TransferReport


def _full() -> TransferReport:
    report = TransferReport()
    report.copy("message", 3)
    report.copy("entity", 2)
    report.copy("conversation")
    report.copy("summary")  # a kind outside the usual order comes last
    report.skip("message", "already in the target", 4)
    report.lose("message.metadata", "the target stores no message metadata", 2)
    report.truncated.append({"session_id": "s1", "conversation_id": "c1", "exported": 200})
    report.unreadable.append("entities no message mentions")
    report.bad_lines = 1
    report.bad_line_errors.append("line 7: not JSON")
    return report


def test_as_dict_names_every_section_and_field() -> None:
    assert _full().as_dict() == {
        "copied": {"message": 3, "entity": 2, "conversation": 1, "summary": 1},
        "skipped": [{"kind": "message", "reason": "already in the target", "count": 4}],
        "not_carried": [
            {
                "field": "message.metadata",
                "reason": "the target stores no message metadata",
                "count": 2,
            }
        ],
        "truncated": [{"session_id": "s1", "conversation_id": "c1", "exported": 200}],
        "unreadable": ["entities no message mentions"],
        "bad_lines": 1,
        "bad_line_errors": ["line 7: not JSON"],
    }
    json.dumps(_full().as_dict())  # JSON-ready


def test_summary_says_each_section_in_order() -> None:
    assert _full().summary().splitlines() == [
        "copied: 1 conversation, 3 messages, 2 entities, 1 summary",
        "skipped: 4 messages (already in the target)",
        "not carried: 2 x message.metadata (the target stores no message metadata)",
        "truncated: conversation 's1' — only the newest 200 messages could be read",
        "not readable: entities no message mentions",
        "bad lines skipped: 1",
        "  line 7: not JSON",
    ]


def test_an_empty_report_copied_nothing() -> None:
    assert TransferReport().summary() == "copied: nothing"
