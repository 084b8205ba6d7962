"""The decisions inside the runbook steps, on literal clusters and a plan made without Spark.

The plan comes from the planner's pure kernels and its artifact writer (the files the Spark job
writes), so the approval-hash rule, the guards, the demotion and the wave bookkeeping are tested
on the same files the DAG reads.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from procedures.run_folder import RunFolder
from operators.approval.step import record_decision
from operators.reassignment.leadership import demoted_order, demotion_targets, reorder_batches
from operators.errors import ApprovalMissing, PlanHashMismatch, WaveStalled, WaveTimeout, WaveWaitFailed
from operators.reassignment.guards import reassignment_problems, stale_problems
from operators.reassignment.execute import ExecuteWavesOperator, build_wave_book
from operators.runtime import APPROVED, ApprovalRecord, plan_hash, require_approval
from procedures.waves.book import WaveMove, WaveSpec, measure, progress_line

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b"}
ASSIGNMENT = {"t": {0: (5, 1, 2), 1: (2, 5, 3), 2: (3, 4, 1), 3: (1, 2, 3), 4: (4, 5, 2), 5: (5, 3, 4)}}
GB = 1024 ** 3


def snapshot(assignment=ASSIGNMENT, leaders=None, adding=None) -> ClusterSnapshot:
    topics = {}
    for name, parts in assignment.items():
        topics[name] = Topic(name, {p: Partition(name, p, tuple(r), adding=tuple((adding or {}).get((name, p), ())),
                                                 leader=(leaders or {}).get((name, p), r[0]), leader_epoch=0,
                                                 isr=tuple(r), controller_epoch=1)
                                    for p, r in parts.items()})
    return ClusterSnapshot({b: Broker(b, r, "127.0.0.1", 9092) for b, r in RACKS.items()}, topics)


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    """A run folder with a real plan (kernels + artifact writer) removing broker 5."""
    from planning.plan_folder.write import write_plan_artifacts
    from planning.kernels.decommission import plan_decommission
    from planning.kernels.waves import WaveLimits, pack_waves
    from spark_jobs.summary import build_summary

    snap = snapshot()
    sizes = {TopicPartition("t", p): (p + 1) * GB for p in range(6)}
    plan = plan_decommission(snap, [5], sizes, seed=0)
    limits = WaveLimits(max_moves_per_broker=1, throttle_bytes_per_s=10 * 1024 ** 2)
    waves = pack_waves(plan.moves, limits)
    folder = RunFolder(tmp_path / "run").ensure()
    write_plan_artifacts(str(folder.plan_dir), plan, waves, build_summary(snap, plan, waves, limits, sizes),
                         limits.throttle_bytes_per_s)
    return folder


def test_execution_needs_an_approval_of_exactly_this_plan(folder: RunFolder) -> None:
    with pytest.raises(ApprovalMissing):
        require_approval(folder)
    digest = plan_hash(folder.plan_dir)
    record_decision(folder, ApprovalRecord("rejected", digest, "bob", "t0"), "r", "approve")
    with pytest.raises(ApprovalMissing, match="decision 'rejected'"):
        require_approval(folder)
    record_decision(folder, ApprovalRecord(APPROVED, "0" * 64, "alice", "t1"), "r", "approve")
    with pytest.raises(PlanHashMismatch, match="alice approved 000000000000"):
        require_approval(folder)
    record_decision(folder, ApprovalRecord(APPROVED, digest, "alice", "t2"), "r", "approve")
    assert require_approval(folder).by == "alice"
    lines = [json.loads(x) for x in folder.audit.read_text().splitlines()]
    assert [x["op"] for x in lines] == ["reject", "approve", "approve"] and lines[-1]["after"]["plan_hash"] == digest


def test_a_plan_edited_after_approval_does_not_load(folder: RunFolder) -> None:
    digest = plan_hash(folder.plan_dir)
    record_decision(folder, ApprovalRecord(APPROVED, digest, "alice", "t"), "r", "approve")
    doc = json.loads((folder.plan_dir / "plan.json").read_text())
    doc["partitions"][0]["replicas"] = list(reversed(doc["partitions"][0]["replicas"]))
    (folder.plan_dir / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidPayload, match="does not match plan.sha256"):
        require_approval(folder)


def test_wave_book_from_the_artifacts_carries_targets_currents_and_sizes(folder: RunFolder) -> None:
    book = build_wave_book(str(folder.plan_dir))
    plan = json.loads((folder.plan_dir / "plan.json").read_text())
    assert book.total_partitions == len(plan["partitions"]) == 4  # every partition with a replica on 5
    assert len(book.waves) >= 2  # one move per broker per wave
    for w in book.waves:
        for m in w.moves:
            assert 5 in m.current and 5 not in m.target and m.size == (m.tp.partition + 1) * GB
    book.save(folder.wave_progress)
    assert type(book).load(folder.wave_progress) == book


def test_stale_plan_names_each_changed_partition_and_accepts_done_or_reordered_ones(folder: RunFolder) -> None:
    from planning.plan_folder.read import load_plan_artifacts

    plan = load_plan_artifacts(str(folder.plan_dir))
    target, current = dict(plan.target), dict(plan.rollback)
    assert stale_problems(snapshot(), current, target) == []
    tp = sorted(target)[0]
    moved = {**ASSIGNMENT["t"], tp.partition: target[tp]}  # already done (a resumed run)
    reordered = {**ASSIGNMENT["t"], tp.partition: tuple(reversed(current[tp]))}  # demotion re-ordered it
    assert stale_problems(snapshot({"t": moved}), current, target) == []
    assert stale_problems(snapshot({"t": reordered}), current, target) == []
    drifted = {**ASSIGNMENT["t"], tp.partition: (1, 2, 4)}
    problems = stale_problems(snapshot({"t": drifted}), current, target)
    assert len(problems) == 1 and problems[0].startswith("plan is stale, re-plan: 1 partition(s)")
    assert f"{tp}: plan assumed replicas {list(current[tp])}, cluster has [1, 2, 4]" in problems[0]


def test_a_running_reassignment_is_ours_only_when_it_is_part_of_the_plan() -> None:
    target = {TopicPartition("t", 0): (4, 1, 2), TopicPartition("t", 1): (2, 1, 3)}
    snap = snapshot()
    ours = replace(snap, reassignment=ReassignmentRequest((ReassignmentEntry("t", 0, (4, 1, 2)),)))
    assert reassignment_problems(ours, target) == []
    other_target = replace(snap, reassignment=ReassignmentRequest((ReassignmentEntry("t", 0, (3, 1, 2)),)))
    foreign = replace(snap, reassignment=ReassignmentRequest((ReassignmentEntry("t", 3, (1, 2, 4)),)))
    for s in (other_target, foreign):
        problems = reassignment_problems(s, target)
        assert len(problems) == 1 and "a reassignment is already in progress" in problems[0]
    api_moving = snapshot(adding={("t", 3): (4,)})  # adding replicas without a znode (AlterPartitionReassignments)
    assert "being reassigned by someone else: t-3" in reassignment_problems(api_moving, target)[0]


def test_demotion_moves_removed_brokers_last_only_where_they_are_preferred() -> None:
    assert demoted_order((5, 1, 2), frozenset({5})) == (1, 2, 5)
    assert demoted_order((5, 4, 1), frozenset({4, 5})) == (1, 5, 4)
    targets = demotion_targets(snapshot(), frozenset({5}))
    assert targets == {TopicPartition("t", 0): (1, 2, 5), TopicPartition("t", 5): (3, 4, 5)}
    only_removed = snapshot({"t": {0: (5,)}})
    assert demotion_targets(only_removed, frozenset({5})) == {}  # nobody else to lead


def test_reorder_batches_keep_every_payload_under_the_limit() -> None:
    from kafka_zk.admin.reassignment import reassignment_request

    targets = {TopicPartition(f"topic-{i:04d}", p): (1, 2, 3) for i in range(40) for p in range(10)}
    batches = reorder_batches(targets, max_bytes=2048)
    assert len(batches) > 1 and sum(len(b) for b in batches) == len(targets)
    assert all(len(reassignment_request(b).encode()) <= 2048 for b in batches)


def test_progress_counts_a_new_replica_as_copied_once_it_is_in_the_isr() -> None:
    wave = WaveSpec(0, (WaveMove(TopicPartition("t", 0), (5, 1, 2), (4, 1, 2), 100),
                        WaveMove(TopicPartition("t", 1), (2, 5, 3), (2, 1, 3), 50)))
    live = {TopicPartition("t", 0): Partition("t", 0, (4, 1, 2, 5), adding=(4,), removing=(5,), leader=1,
                                              isr=(1, 2, 5, 4)),
            TopicPartition("t", 1): Partition("t", 1, (2, 1, 3, 5), adding=(1,), removing=(5,), leader=2,
                                              isr=(2, 3, 5))}
    p = measure(wave, live)
    assert (p.done, p.total, p.bytes_remaining, p.bytes_total) == (0, 2, 50, 150)
    live[TopicPartition("t", 0)] = Partition("t", 0, (4, 1, 2), leader=1, isr=(1, 2, 4))
    p = measure(wave, live)
    assert (p.done, p.bytes_remaining, p.pending) == (1, 50, ("t-1",))
    line = progress_line(p, overall_done=3, overall_total=9, elapsed_s=10.0, bytes_copied=100)
    assert line == ("wave 0: 1/2 partitions, overall 3/9, 50 B remaining of 150 B, 10 B/s, ETA 5s (from ISR joins)")


@pytest.mark.parametrize("status, error", [("timeout", WaveTimeout), ("stalled", WaveStalled),
                                           ("error", WaveWaitFailed)])
def test_execute_complete_maps_each_failed_wait_to_its_error(tmp_path: Path, status: str, error: type) -> None:
    from airflow.sdk import DAG

    op = ExecuteWavesOperator(task_id="execute_waves", zk_conn_id="kz", run_root=str(tmp_path))
    context = {"dag": DAG("decommission_brokers", schedule=None), "run_id": "manual__1"}
    with pytest.raises(error, match="wave 2 went wrong.*Clear execute_waves to resume"):
        op.execute_complete(context, {"status": status, "wave_id": 2, "message": "wave 2 went wrong"})
