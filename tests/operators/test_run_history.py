"""What a run went through, in words: window pauses, overruns, outside_window, retries; conf keys
that are no Params; an approval's outcome."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from procedures.run_folder import RunFolder
from operators.approval.conf_check import unknown_keys_message
from procedures.reports.history import history_lines, record_retry
from procedures.outcome.contract import approval_outcome
from procedures.windows.pause import WindowBook

PARAMS = ["brokers_to_remove", "dry_run", "outside_window", "run_root", "zk_conn_id"]


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    return RunFolder.for_run(tmp_path, "decommission_brokers", "manual__1").ensure()


def test_pauses_overruns_the_override_and_retries_are_each_one_sentence(folder: RunFolder) -> None:
    book = WindowBook(pauses=[{"before_wave": 3, "at": "2026-11-26T21:59:00+00:00", "reason": "wave 3 does not fit",
                               "resumes_at": "2026-11-27T02:00:00+00:00", "resume_window": "night",
                               "throttles": "kept", "resumed_at": "2026-11-27T02:00:04+00:00"}],
                      overran=[{"wave": 2, "window": "evening", "closed": "2026-11-26T22:00:00+00:00",
                                "finished": "2026-11-26T22:03:00+00:00"}], outside_window=True)
    book.save(folder)
    assert history_lines(folder)[1].startswith("window pause before batch 4 at ")     # a batch runbook's (0-based)
    assert "throttles" not in " ".join(history_lines(folder))
    folder.write_json(folder.wave_progress, {"waves": []})                           # a reassignment's waves
    for tries in (1, 2, 3, 3):          # the first try is no retry; a resumed deferral is the same try
        record_retry({"ti": SimpleNamespace(try_number=tries, task_id="execute_waves"), "run_id": "manual__1",
                      "params": {"run_root": str(folder.root.parent.parent)},
                      "dag": SimpleNamespace(dag_id="decommission_brokers")})
    lines = history_lines(folder)
    assert lines[0].startswith("outside_window=true")
    assert lines[1] == ("window pause before wave 3 at 2026-11-26T21:59:00+00:00: wave 3 does not fit; resumed at "
                        "2026-11-27T02:00:04+00:00 (window night; throttles kept)")
    assert lines[2].startswith("wave 2 was in flight when window evening closed")
    assert lines[3].startswith("retried: execute_waves ran 3 times (tries 2, 3 were retries")
    assert len(lines) == 4


def test_a_batch_runbooks_pause_names_the_batch_and_no_throttles(folder: RunFolder) -> None:
    from datetime import datetime, timezone

    from procedures.windows.guard import WaveDecision

    book = WindowBook()
    book.paused(0, datetime(2026, 11, 26, 21, 59, tzinfo=timezone.utc).timestamp(),
                WaveDecision(start=False, reason="no window admitting delete_topics is open"), False, what="batch 1/2")
    book.save(folder)
    [line] = history_lines(folder)
    assert line.startswith("window pause before batch 1 at 2026-11-26T21:59:00+00:00: no window admitting "
                           "delete_topics is open;"), line
    assert "wave" not in line and "throttles" not in line, line
    assert WindowBook.load(folder).pauses[0]["what"] == "batch 1/2"      # what the progress page names


def test_a_quiet_run_went_through_nothing(folder: RunFolder) -> None:
    assert history_lines(folder) == []


@pytest.mark.parametrize("key, says", [
    ("skip_approval", "no trigger-time way to skip the approval"),
    ("PRE_APPROVED", "pre_approved was removed"),
    ("brokers_to_removed", "did you mean 'brokers_to_remove'?"),
    ("colour", "'colour': not a Param of decommission_brokers. The Params are: brokers_to_remove, dry_run"),
])
def test_a_conf_key_that_is_no_param_is_named_with_the_fix(key: str, says: str) -> None:
    message = unknown_keys_message({key: True, "dry_run": True}, PARAMS, "decommission_brokers")
    assert message is not None and says in message and "nothing was done" in message


def test_conf_keys_that_are_params_pass() -> None:
    assert unknown_keys_message({"dry_run": True, "zk_conn_id": "c"}, PARAMS, "decommission_brokers") is None


@pytest.mark.parametrize("record, outcome", [
    (None, None),
    ({"decision": "approved", "by": "bob", "at": "t1"}, None),
    ({"decision": "rejected", "by": "bob", "at": "t1", "note": ""}, "rejected by bob at t1"),
    ({"decision": "rejected", "by": None, "at": "t1", "note": "no answer before the approval expired (t0)",
      "expired": True, "expires_at": "t0"}, "approval expired at t0"),
    ({"decision": "rejected", "by": "carol", "at": "t2", "note": "approval refused: answered after it expired",
      "expired": True, "expires_at": "t0"}, "approval expired at t0 (answered late by carol)"),
    ({"decision": "rejected", "by": "dag_test", "at": "t1", "note": "approval refused: four-eyes: dag_test "
      "triggered this run"}, "approval by dag_test refused at t1: four-eyes: dag_test triggered this run"),
])
def test_an_approval_outcome_never_reads_rejected_by_unknown(record, outcome) -> None:
    said = approval_outcome(record)       # (kind, the words)
    assert (said[1] if said else None) == outcome
    assert said is None or said[0] == ("expired" if "expired" in outcome else "refused" if "refused" in outcome
                                       else "rejected")


def test_a_zookeeper_outage_a_wave_rode_out_is_one_sentence(folder: RunFolder) -> None:
    from procedures.reports.history import record_outage

    record_outage(folder, "wave 2", 7.4, "connection loss")
    [line] = history_lines(folder)
    assert line.startswith("ZooKeeper outage ridden out during wave 2 at ") and "unreachable for 7s" in line
    assert line.endswith("(connection loss); the run went on")
