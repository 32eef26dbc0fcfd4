"""The automatic classes of ``mutation_triage``: which survivors' diffs are only text."""

from __future__ import annotations

from tests.conformance.mutation_triage import classify


def _diff(*lines: str) -> str:
    return "\n".join(["--- a.py", "+++ a.py", "@@ -1,5 +1,5 @@", *lines]) + "\n"


def test_a_help_text_on_one_line_is_a_message() -> None:
    diff = _diff(
        '-    parser.add_argument("url", help="backend URL to read")',
        '+    parser.add_argument("url", help=None)',
    )
    assert classify(diff, case_only=False) == "message"


def test_a_help_text_over_several_lines_is_a_message() -> None:
    removed = _diff(
        "     parser.add_argument(",
        '         "--restart",',
        '-        help="ignore and delete the checkpoint "',
        '-        "first",',
        "-    )",
        "+        )",
    )
    assert classify(removed, case_only=False) == "message"
    continued = _diff(
        '         help="ignore and delete the checkpoint "',
        '-        "first",',
        '+        "XXfirstXX",',
        "     )",
    )
    assert classify(continued, case_only=False) == "message"


def test_a_literal_that_is_not_help_text_is_reviewed() -> None:
    choices = _diff(
        "     parser.add_argument(",
        '         "--on-conflict",',
        "-        choices=ON_CONFLICT,",
        "+        choices=None,",
    )
    assert classify(choices, case_only=False) == "review"
    argument = _diff(
        "     values = [",
        '-        "first",',
        '+        "XXfirstXX",',
        "     ]",
    )
    assert classify(argument, case_only=False) == "review"


def test_an_error_message_is_a_message_and_case_only_is_case_only() -> None:
    error = _diff('-    raise ValueError("bad")', '+    raise ValueError("XXbadXX")')
    assert classify(error) == "message"
    sql = _diff('-    run("SELECT 1")', '+    run("select 1")')
    assert classify(sql) == "case-only"
    assert classify(sql, case_only=False) == "review"
