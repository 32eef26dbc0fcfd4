"""The automatic classes of ``mutation_triage``: which survivors' diffs are only text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import mutation_triage
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


def test_the_interval_of_a_sampled_score() -> None:
    low, high = mutation_triage.wilson(95, 100)
    assert round(low, 3) == 0.888 and round(high, 3) == 0.978
    low, high = mutation_triage.wilson(10, 10)
    assert round(low, 3) == 0.722 and high == pytest.approx(1.0)
    assert mutation_triage.wilson(0, 0) == (0.0, 1.0)


def test_a_score_within_named_mutants(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = {
        "m.x_f__mutmut_1": "killed",
        "m.x_f__mutmut_2": "killed",
        "m.x_g__mutmut_1": "survived",
    }
    monkeypatch.setattr(mutation_triage, "statuses", lambda: every)
    monkeypatch.setattr(mutation_triage, "_diff", lambda name: "")
    within = tmp_path / "sample.txt"
    within.write_text("m.x_f__mutmut_1\nm.x_f__mutmut_2\n", "utf-8")
    assert (
        mutation_triage.main(["--target", "bolt", "--prefix", "m.", "--within", str(within)]) == 0
    )
    assert "score: 2/2 killed" in capsys.readouterr().out
    assert mutation_triage.main(["--target", "bolt", "--prefix", "m."]) == 0
    assert "score: 2/3 killed" in capsys.readouterr().out


def test_only_a_report_reasons_text_is_a_message() -> None:
    reason = "its session belongs to another user in the target"
    line = f'        self.tally.skip("conversation", "{reason}")'
    upper = line.replace(reason, reason.upper())
    assert classify(_diff(f"-{line}", f"+{upper}"), case_only=False) == "message"
    kind = line.replace('"conversation"', "None")
    assert classify(_diff(f"-{line}", f"+{kind}"), case_only=False) == "review"
