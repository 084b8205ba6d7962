"""``kafka-runbook plan --zookeeper`` reads assignments first and the touched partitions' states
while the input loads (cli/plan_zookeeper.py): the plan's bytes are the same whether the states
are read before (a full snapshot), concurrently (the CLI) or after the input is loaded."""

from __future__ import annotations

import json
import os

from cli.main import main
from kafka_zk.codecs import TopicPartition
from kafka_zk.connect import close, connect
from kafka_zk.log_dirs import encode_log_dirs
from kafka_zk.snapshot import read_partition_states, read_snapshot
from formats.snapshot_file import load_snapshot, write_snapshot
from spark_jobs import plan_job
from tests.zk_helpers import create_topic_by_hand, register_brokers

REMOVED = 3
ARTIFACTS = ("plan.json", "rollback.json", "waves.json", "throttles.json", "plan.sha256")


def _cluster(zk) -> dict[int, dict[TopicPartition, int]]:
    """9 brokers in racks a/b/c, 3 topics × 30 partitions RF 3; leaders spread over all three
    replicas (so the broker a new replica copies from is not always the first); log-dirs sizes."""
    register_brokers(zk, {b: "abc"[b % 3] for b in range(1, 10)})
    by_broker: dict[int, dict[TopicPartition, int]] = {}
    for t in range(3):
        assignment = {p: [1 + (p + t) % 9, 1 + (p + t + 1) % 9, 1 + (p + t + 2) % 9] for p in range(30)}
        create_topic_by_hand(zk, f"t{t}", assignment)
        for p, r in assignment.items():
            zk.set(f"/brokers/topics/t{t}/partitions/{p}/state", json.dumps({
                "controller_epoch": 1, "leader": r[p % 3], "version": 1, "leader_epoch": 3, "isr": r}).encode())
            for b in r:
                by_broker.setdefault(b, {})[TopicPartition(f"t{t}", p)] = (p + 1) * 10_000_000
    return by_broker


def _plan(argv_tail: list[str], out: str) -> None:
    assert main(["plan", "decommission", "--brokers", str(REMOVED), "--throttle", "1000000",
                 "--max-moves-per-broker", "1", "--engine", "driver", "--out", out, *argv_tail]) == 0


def _bytes(out: str) -> dict[str, bytes]:
    return {name: open(os.path.join(out, name), "rb").read() for name in ARTIFACTS}


def test_plan_bytes_are_the_same_whether_states_are_read_before_concurrently_or_after(
        zk, zk_connect, tmp_path, capsys) -> None:
    sizes = tmp_path / "log-dirs.txt"
    sizes.write_text(encode_log_dirs(_cluster(zk)))
    client = connect(zk_connect)
    try:
        full = read_snapshot(client)                              # before: every state, then plan
        write_snapshot(full, str(tmp_path / "full.jsonl"))
        assignments = read_snapshot(client, states=False)         # after: states once input is loaded
        write_snapshot(assignments, str(tmp_path / "assignments.jsonl"))
        touched = [p.tp for p in assignments.partitions() if REMOVED in p.replicas]
        asked = []

        def states_after():
            asked.append(True)
            return read_partition_states(client, touched)

        args = plan_job.parse_args(["--snapshot", str(tmp_path / "assignments.jsonl"), "--op", "decommission",
                                    "--brokers", str(REMOVED), "--throttle", "1000000", "--sizes", str(sizes),
                                    "--max-moves-per-broker", "1", "--engine", "driver",
                                    "--out", str(tmp_path / "after")])
        after = plan_job.execute(args, states=states_after)
        assert asked == [True] and after["timings_s"]["states_wait"] >= 0
    finally:
        close(client)
    _plan(["--snapshot", str(tmp_path / "full.jsonl"), "--sizes", str(sizes)], str(tmp_path / "before"))
    _plan(["--zookeeper", zk_connect, "--sizes", str(sizes)], str(tmp_path / "concurrently"))
    _plan(["--snapshot", str(tmp_path / "assignments.jsonl"), "--sizes", str(sizes)], str(tmp_path / "none"))
    capsys.readouterr()
    before = _bytes(str(tmp_path / "before"))
    assert _bytes(str(tmp_path / "concurrently")) == before
    assert _bytes(str(tmp_path / "after")) == before
    assert _bytes(str(tmp_path / "none"))["waves.json"] != before["waves.json"]   # the leaders matter

    # the CLI's snapshot holds the states it read (the touched partitions'), and replans the same plan
    saved = load_snapshot(str(tmp_path / "concurrently" / "snapshot.jsonl"))
    for p in saved.partitions():
        assert (p.leader is not None) == (REMOVED in p.replicas)
        if p.leader is not None:
            assert p == full.partition(p.tp)
    _plan(["--snapshot", str(tmp_path / "concurrently" / "snapshot.jsonl"), "--sizes", str(sizes)],
          str(tmp_path / "again"))
    assert _bytes(str(tmp_path / "again")) == before
    summary = json.loads((tmp_path / "concurrently" / "summary.json").read_text())
    assert {"zk_assignments", "zk_states", "states_wait"} <= set(summary["timings_s"])


def test_states_read_in_the_worker_process_give_the_same_plan(zk, zk_connect, tmp_path, capsys, monkeypatch) -> None:
    """From STATES_IN_CHILD_MIN touched partitions the states are read by a forked worker on a
    session of its own (not in a thread beside the input build): same plan bytes, same snapshot."""
    from cli import plan_zookeeper

    sizes = tmp_path / "log-dirs.txt"
    sizes.write_text(encode_log_dirs(_cluster(zk)))
    _plan(["--zookeeper", zk_connect, "--sizes", str(sizes)], str(tmp_path / "thread"))
    monkeypatch.setattr(plan_zookeeper, "STATES_IN_CHILD_MIN", 1)
    _plan(["--zookeeper", zk_connect, "--sizes", str(sizes)], str(tmp_path / "child"))
    _plan(["--zookeeper", zk_connect], str(tmp_path / "child-unsized"))     # no sizes: the worker alone
    capsys.readouterr()
    assert _bytes(str(tmp_path / "child")) == _bytes(str(tmp_path / "thread"))
    assert load_snapshot(str(tmp_path / "child" / "snapshot.jsonl")).topics == \
        load_snapshot(str(tmp_path / "thread" / "snapshot.jsonl")).topics
    monkeypatch.setattr(plan_zookeeper, "STATES_IN_CHILD_MIN", 10**9)
    _plan(["--zookeeper", zk_connect], str(tmp_path / "thread-unsized"))
    capsys.readouterr()
    assert _bytes(str(tmp_path / "child-unsized")) == _bytes(str(tmp_path / "thread-unsized"))
