"""A large plan is validated in a forked child while its waves are packed (spark_jobs/forked_check.py):
the same plan files as validating in-process, and an invalid plan still raises every violation
in this process with nothing written."""

from __future__ import annotations

import os

import pytest

from kafka_zk.planning.artifacts import MOVE_FILES
from kafka_zk.planning.model import Move, PlanInvalid, make_plan
from spark_jobs import forked_check, operations, plan_job
from spark_jobs.synthetic import synthetic_cluster, synthetic_log_dirs, synthetic_sizes
from kafka_zk.snapshot_file import write_snapshot


def test_a_passing_check_runs_in_the_child_only() -> None:
    ran: list[int] = []
    pending = forked_check.start(lambda: ran.append(os.getpid()))
    pending.wait()
    assert ran == []                    # the append happened in the child's copy


def test_a_failing_check_raises_its_own_error_here() -> None:
    def check() -> None:
        raise PlanInvalid("decommission", ["a violation", "another"])

    with pytest.raises(PlanInvalid) as caught:
        forked_check.start(check).wait()
    assert caught.value.violations == ["a violation", "another"]


def test_without_fork_the_check_runs_at_wait() -> None:
    ran: list[int] = []
    pending = forked_check.start(lambda: ran.append(1), fork=False)
    assert ran == []
    pending.wait()
    assert ran == [1]


def _job(tmp_path, out: str):
    snap = synthetic_cluster(12, 3, 8, 40, 3, seed=5)
    sizes = synthetic_sizes(snap, seed=6)
    write_snapshot(snap, str(tmp_path / "snap.jsonl"))
    (tmp_path / "log-dirs.txt").write_text(synthetic_log_dirs(snap, sizes))
    return plan_job.parse_args(["--snapshot", str(tmp_path / "snap.jsonl"), "--op", "decommission", "--brokers", "2,7",
                                "--sizes", str(tmp_path / "log-dirs.txt"), "--throttle", "1000000",
                                "--engine", "driver", "--out", str(tmp_path / out)])


def _files(folder) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in ("plan.json", "rollback.json", "waves.json", "throttles.json",
                                                   "plan.sha256")}


def test_the_forked_validation_gives_the_same_plan_files(tmp_path, monkeypatch) -> None:
    here = plan_job.execute(_job(tmp_path, "here"))
    monkeypatch.setattr(plan_job, "FORKED_CHECK_MIN_MOVES", 1)
    forked = plan_job.execute(_job(tmp_path, "forked"))
    assert forked["plan_hash"] == here["plan_hash"] and forked["moves"] > 0
    assert _files(tmp_path / "forked") == _files(tmp_path / "here")


def test_an_invalid_plan_validated_in_the_child_raises_here_and_writes_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(plan_job, "FORKED_CHECK_MIN_MOVES", 1)
    real = operations.plan_decommission

    def broken(snapshot, removed, *args, **kwargs):
        plan = real(snapshot, removed, *args, **kwargs)
        m = plan.moves[0]          # a target that keeps a removed broker: rule 4
        bad = Move(m.tp, m.current, m.current, m.size, m.leader)
        return make_plan("decommission", [bad, *plan.moves[1:]], plan.seed, removed=plan.removed,
                         sized=plan.sized, params=plan.params)

    monkeypatch.setattr(operations, "plan_decommission", broken)
    with pytest.raises(PlanInvalid, match="not moved|removed"):
        plan_job.execute(_job(tmp_path, "out"))
    assert not (tmp_path / "out" / "plan.json").exists() and not (tmp_path / "out" / "plan.sha256").exists()


def test_a_result_comes_back_from_the_child_and_a_call_runs_once() -> None:
    ran: list[int] = []

    def call() -> str:
        ran.append(1)
        return f"pid {os.getpid()}"

    forked = forked_check.start(call)
    assert forked.wait() == forked.wait() != f"pid {os.getpid()}" and ran == []
    here = forked_check.start(call, fork=False)
    assert here.wait() == here.wait() == f"pid {os.getpid()}" and ran == [1]


def test_a_failure_after_the_move_files_were_forked_leaves_none_of_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(plan_job, "FORKED_CHECK_MIN_MOVES", 1)
    started: list[forked_check.Pending] = []
    real_start = forked_check.start

    def recording_start(call, fork=True):
        started.append(real_start(call, fork))
        return started[-1]

    def failing(*args, **kwargs):
        raise RuntimeError("summary failed")

    monkeypatch.setattr(forked_check, "start", recording_start)
    monkeypatch.setattr(plan_job, "build_summary", failing)
    with pytest.raises(RuntimeError, match="summary failed"):
        plan_job.execute(_job(tmp_path, "out"))
    assert len(started) == 2 and all(p.pid for p in started)      # the check's child, the writer's child
    for p in started:                   # a writer left running would write after the refusal: wait for it
        try:
            os.waitpid(p.pid, 0)
        except ChildProcessError:       # already reaped by the job
            pass
    assert not any((tmp_path / "out" / n).exists() for n in (*MOVE_FILES, "plan.sha256", "summary.json"))


def test_a_kernel_fault_downstream_of_an_invalid_plan_is_reported_as_the_invalid_plan(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(plan_job, "FORKED_CHECK_MIN_MOVES", 1)
    real = operations.plan_decommission

    def broken(snapshot, removed, *args, **kwargs):
        plan = real(snapshot, removed, *args, **kwargs)
        m = plan.moves[0]          # a target naming one broker twice (rule 2)
        bad = Move(m.tp, m.current, (m.target[0], m.target[0], *m.target[2:]), m.size, m.leader)
        return make_plan("decommission", [bad, *plan.moves[1:]], plan.seed, removed=plan.removed,
                         sized=plan.sized, params=plan.params)

    def packing_fails(moves, limits):
        raise ValueError("the packer met the duplicate")

    monkeypatch.setattr(operations, "plan_decommission", broken)
    monkeypatch.setattr(plan_job, "pack_waves", packing_fails)
    with pytest.raises(PlanInvalid, match="duplicate broker"):
        plan_job.execute(_job(tmp_path, "out"))
