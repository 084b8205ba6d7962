"""The live progress page for every runbook kind, not only the waves of a reassignment (issue 36): the
batches of a topic deletion and of a leader election, the roll's broker batches with their steps
(stopped, registered, in sync, leaders back), and "finished" on a finished run — never "No wave has
started yet … (planning, approval or guards)" on a batch run that is done. The progress files are
written by the runbooks' own books (procedures/batches/book.py, procedures/restart/roll.py)."""

from __future__ import annotations

from pathlib import Path

from procedures.run_folder import RunFolder
from procedures.batches.book import BatchBook, BatchState
from operators.batches.deletion import PROGRESS_FILE as DELETION, DeletionBatch
from operators.batches.election import PROGRESS_FILE as ELECTION, ElectionBatch
from procedures.live_progress import batch_progress, render_progress_page
from procedures.restart.roll import RestartBatch
from operators.restart.steps import PROGRESS as ROLL

T0 = 1_764_644_400.0            # 2025-12-02T03:00:00Z


def _folder(tmp_path: Path) -> RunFolder:
    return RunFolder(tmp_path / "run").ensure()


def test_a_finished_deletion_shows_its_batches_and_says_finished(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    book = BatchBook.fresh(DeletionBatch, [["tmp-0", "tmp-1"], ["tmp-2"]])
    for i in (0, 1):
        book = book.advance(i, BatchState.SUBMITTED, T0 + 10 * i, marked=tuple(book.batches[i].items))
        book = book.advance(i, BatchState.DONE, T0 + 10 * i + 4)
    book.save(folder.root / DELETION)
    page = render_progress_page(folder, "delete_topics", "r1", active=False, state="success")
    assert "No wave" not in page and "planning, approval or guards" not in page
    assert "The run has finished (success): <b>2/2</b> batches done" in page and "3 topics in all" in page
    assert '<tr class="done" data-batch="1">' in page and "tmp-0, tmp-1" in page and "2 marked for deletion" in page
    assert "<td>4 s</td>" in page and "refresh" not in page


def test_an_election_in_progress_shows_the_batch_being_elected_and_refreshes(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    book = BatchBook.fresh(ElectionBatch, [["t-0", "t-1"], ["t-2"]])
    book = book.advance(0, BatchState.SUBMITTED, T0, submitted=("t-0", "t-1"))
    book = book.advance(0, BatchState.DONE, T0 + 2, elected=("t-0", "t-1"))
    book = book.advance(1, BatchState.SUBMITTED, T0 + 3, submitted=("t-2",))
    book.save(folder.root / ELECTION)
    progress = batch_progress(folder)
    assert progress is not None and progress.noun == "partition" and progress.done == 1
    page = render_progress_page(folder, "preferred_leader_election", "r1", active=True, state="running")
    assert "finished" not in page and "<b>1/2</b> batches done" in page and "refresh" in page
    assert '<tr class="submitted" data-batch="2">' in page and "2 leader(s) elected, 0 not" in page


def test_the_roll_shows_each_broker_batch_step_by_step_and_a_failed_one_says_why(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    book = BatchBook.fresh(RestartBatch, [["1"], ["2"], ["3"]])
    book = book.advance(0, BatchState.SUBMITTED, T0, step="in_sync", down_at=T0 + 1, registered_at=T0 + 17,
                        in_sync_at=T0 + 20, leaders_back_at=T0 + 25)
    book = book.advance(0, BatchState.DONE, T0 + 25)
    book = book.advance(1, BatchState.SUBMITTED, T0 + 30, step="restarting", down_at=T0 + 31)
    book = book.advance(1, BatchState.FAILED, T0 + 330, message="broker 2 did not register again within 300 s")
    book.save(folder.root / ROLL)
    page = render_progress_page(folder, "rolling_restart", "r1", active=False, state="failed")
    assert "The run has finished (failed): <b>1/3</b> batches done" in page and "1 failed" in page
    assert "<th>stopped</th><th>registered</th><th>in sync</th><th>leaders back</th>" in page
    assert "<td>03:00:01 UTC</td><td>03:00:17 UTC</td><td>03:00:20 UTC</td><td>03:00:25 UTC</td>" in page
    assert "<td>03:00:31 UTC</td><td>—</td><td>—</td><td>—</td>" in page
    assert "broker 2 did not register again within 300 s" in page
    assert '<tr class="pending" data-batch="3">' in page


def test_a_run_that_ended_before_any_write_says_finished_not_before_its_first_wave(tmp_path: Path) -> None:
    page = render_progress_page(_folder(tmp_path), "delete_topics", "r1", active=False, state="failed")
    assert "The run has finished (failed) without starting a wave or a batch" in page
    assert "No wave or batch has started yet" not in page


def test_every_runbooks_approval_has_the_live_progress_one_click_away() -> None:
    from cli.local_run import load_dag

    for dag_id in ("delete_topics", "preferred_leader_election", "rolling_restart", "decommission_brokers",
                   "topic_changes", "stuck_reassignment"):
        dag = load_dag(dag_id)
        approvals = [t for t in dag.tasks if t.task_id.startswith("approve")]
        assert approvals, dag_id
        for task in approvals:
            assert "Live progress" in [link.name for link in task.operator_extra_links], (dag_id, task.task_id)
    roll = load_dag("rolling_restart").get_task("roll")
    assert "Live progress" in [link.name for link in roll.operator_extra_links]
