"""The approval body says the four-eyes rule where the approver and the triggerer read it — who cannot
approve, who may, what happens to the triggerer's own Approve — and its durations and racks in words
("12 h", not "12:00:00"; "no rack", not "None")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from operators.approval.step import duration_text, expiry_text, four_eyes_text
from procedures.restart.plan import rack_text


def test_an_assigned_request_names_the_approvers_and_what_the_triggerers_approve_meets() -> None:
    assert four_eyes_text("alice", ["bob", "carol"]) == (
        "Four eyes: alice triggered this run and cannot approve it; it is assigned to bob, carol. An Approve from "
        "alice is refused (the UI may show it as \"Access Denied\") and the request keeps waiting for them.")


def test_an_unassigned_request_says_anyone_else_may_answer_and_the_triggerers_approve_fails_the_run() -> None:
    text = four_eyes_text("alice", [])
    assert text.startswith("Four eyes: alice triggered this run and cannot approve it; anyone else")
    assert "An Approve from alice is refused: the run fails and nothing is written." in text
    assert four_eyes_text(None, []) == "The person who triggered the run cannot approve it (four eyes)."


@pytest.mark.parametrize("span, words", [(timedelta(days=7), "7 days"), (timedelta(hours=48), "2 days"),
                                         (timedelta(hours=36), "36 h"), (timedelta(hours=12), "12 h"), (timedelta(minutes=90), "1.5 h"),
                                         (timedelta(minutes=30), "30 min"), (timedelta(seconds=10), "10 s")])
def test_durations_read_as_words(span: timedelta, words: str) -> None:
    assert duration_text(span) == words
    now = datetime(2026, 12, 2, 3, 0, tzinfo=timezone.utc)
    assert expiry_text(now, span).endswith(f", in {words}") and ":00:" not in expiry_text(now, span)


def test_a_missing_rack_reads_no_rack() -> None:
    assert [rack_text(r) for r in (None, "", "None", "c")] == ["no rack", "no rack", "no rack", "c"]
