"""A rehearsal of a cluster whose reassignment in flight targets a broker that is not registered
ends at once with that problem (cli/rehearsal_run.py, kafka_sim/from_snapshot.py's
``unfinishable_replays``): the copy's controller would wait for that replica forever, and before
the fix the rehearsal waited until its seed's timeout (the decommission DAG's test of a refused
reassignment took ~608 s). Nothing is started: the ZooKeeper given is one nobody listens on."""

from __future__ import annotations

import json
from pathlib import Path

from cli.main import main
from kafka_sim.from_snapshot import unfinishable_replays
from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest, TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from formats.snapshot_file import write_snapshot
from spark_jobs import plan_job

GiB = 1024 ** 3


def _snapshot(reassignment: ReassignmentRequest | None = None, adding: tuple[int, ...] = ()) -> ClusterSnapshot:
    def part(p: int, replicas: tuple[int, ...], **more) -> Partition:
        return Partition("payments", p, replicas, leader=replicas[0], leader_epoch=1, isr=replicas,
                         controller_epoch=1, **more)

    parts = {p: part(p, tuple((p + i) % 4 + 1 for i in range(2))) for p in range(8)}
    if adding:
        parts[2] = Partition("payments", 2, (*parts[2].replicas, *adding), leader=parts[2].replicas[0],
                             leader_epoch=1, isr=parts[2].replicas, controller_epoch=1, adding=adding)
    return ClusterSnapshot({b: Broker(b, None, f"kafka{b}", 9092) for b in (1, 2, 3, 4)},
                           {"payments": Topic("payments", parts)}, reassignment=reassignment)


def test_a_rehearsal_whose_move_in_flight_targets_an_unregistered_broker_ends_at_once_with_the_problem(
        tmp_path: Path, capsys) -> None:
    write_snapshot(_snapshot(), str(tmp_path / "plain.jsonl"))
    plan = tmp_path / "plan"
    plan_job.execute(plan_job.parse_args([
        "--snapshot", str(tmp_path / "plain.jsonl"), "--op", "decommission", "--brokers", "4", "--out", str(plan),
        "--engine", "driver", "--throttle", str(50 * 1024 ** 2), "--max-moves-per-broker", "2"]), None)
    target = (3, 4, 99)          # broker 99 never comes (tests/dags/test_decommission_brokers.py's shape)
    stuck = _snapshot(ReassignmentRequest((ReassignmentEntry("payments", 2, target),)), adding=(99,))
    write_snapshot(stuck, str(tmp_path / "snapshot.jsonl"))
    out = tmp_path / "out"
    code = main(["rehearse", "--snapshot", str(tmp_path / "snapshot.jsonl"), "--plan-dir", str(plan),
                 "--zookeeper", "127.0.0.1:1", "--out", str(out)])       # nothing listens there: nothing starts
    printed = capsys.readouterr()
    assert code == 1 and "can never finish" in printed.out, (printed.out, printed.err)   # 1: problems found
    doc = json.loads((out / "rehearsal.json").read_text())
    assert doc["passed"] is False and doc["finished"] is False
    assert len(doc["problems"]) == 1, doc["problems"]
    problem = doc["problems"][0]
    for part in ("a reassignment already in progress can never finish", "payments-2 → [3, 4, 99]",
                 "broker 99 is not registered", "stuck_reassignment runbook"):
        assert part in problem, problem
    assert all(w["start_s"] is None for w in doc["waves"]) and doc["waves"]       # nothing driven
    assert doc["headline"].endswith("1 problem")
    assert "can never finish" in (out / "rehearsal.md").read_text()


def test_only_a_move_whose_target_is_not_registered_is_unfinishable_and_a_dead_holder_is_named_down() -> None:
    ok = _snapshot(ReassignmentRequest((ReassignmentEntry("payments", 2, (3, 4, 1)),)), adding=(1,))
    assert unfinishable_replays(ok) == ()                      # every target broker registered: replayed
    assert unfinishable_replays(_snapshot()) == ()             # nothing in flight
    dead = ClusterSnapshot({b: Broker(b, None, f"kafka{b}", 9092) for b in (1, 2, 3)},     # 4 is down
                           _snapshot().topics,
                           reassignment=ReassignmentRequest((ReassignmentEntry("payments", 2, (3, 4)),
                                                             ReassignmentEntry("payments", 5, (2, 3, 99)))))
    found = unfinishable_replays(dead, recreated={4})
    assert [(m.tp, m.missing, m.dead) for m in found] == [
        (TopicPartition("payments", 2), (4,), (4,)), (TopicPartition("payments", 5), (99,), ())]
    assert "broker 4 is down" in found[0].sentence() and "broker 99 is not registered" in found[1].sentence()
    assert [m.dead for m in unfinishable_replays(dead)] == [(), ()]     # not a broker the plan re-creates
