"""`kafka-runbook plan` plans every operation the DAGs plan (rebalance, add-brokers, change-rf,
move-topics, reassign, rollback, elect, delete, decommission) from a saved snapshot, writing the
same artifacts and summary as the plan step; bad input is one clear error and nothing is written."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from cli.main import main
from kafka_zk.model import Broker, ClusterSnapshot
from formats.sizes_file import write_sizes_file
from formats.snapshot_file import write_snapshot
from spark_jobs.synthetic import skewed_cluster, synthetic_cluster, synthetic_sizes

ARTIFACTS = {"plan.json", "rollback.json", "waves.json", "throttles.json", "election.json", "deletion.json",
             "summary.json"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("plan-ops")
    base = skewed_cluster(synthetic_cluster(9, 3, 4, 6, 3, seed=2), hot_per_rack=1, shift=0.3, seed=3)
    snap = ClusterSnapshot({**base.brokers, 9: Broker(9, "r0", "b9", 9092)}, base.topics,
                           controller_id=base.controller_id, controller_epoch=base.controller_epoch)
    write_snapshot(snap, str(d / "snap.jsonl"))
    write_sizes_file(synthetic_sizes(snap, seed=4, alpha=2.5), str(d / "sizes.jsonl"))
    p = snap.partition(next(iter(sorted(p.tp for p in snap.partitions()))))
    rack = snap.brokers[p.replicas[0]].rack
    other = [b for b in sorted(snap.brokers) if b not in p.replicas and snap.brokers[b].rack == rack][0]
    (d / "restore.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": p.topic, "partition": p.partition, "replicas": [other, *p.replicas[1:]]}]}))
    return d


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


OPERATIONS = {
    "rebalance": ("--max-replicas-moved", "20", "--target-leader-spread", "1"),
    "add-brokers": ("--brokers", "9"),
    "decommission": ("--brokers", "8"),
    "change-rf": ("--topics", "topic-0000", "--replication-factor", "2"),
    "move-topics": ("--topics", "topic-0001", "--brokers", "0,1,2,3,4,5"),
    "reassign": ("--reassignment-json-file", "{d}/restore.json"),
    "rollback": ("--reassignment-json-file", "{d}/restore.json"),
    "elect": (),
    "delete": ("--topics", "topic-0002"),
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_operation_plans_from_a_snapshot_with_the_step_artifacts(files: Path, op: str) -> None:
    out = files / f"out-{op}"
    extra = [a.format(d=files) for a in OPERATIONS[op]]
    rc, stdout, stderr = run("plan", op, *extra, "--snapshot", str(files / "snap.jsonl"), "--sizes",
                             str(files / "sizes.jsonl"), "--engine", "driver", "--out", str(out))
    assert rc == 0, stderr
    assert ARTIFACTS <= {p.name for p in out.iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    canonical = {"reassign": "reassign-json", "elect": "election", "delete": "delete-topics"}.get(op, op)
    assert summary["operation"] == canonical and f"Plan {canonical}:" in stdout
    if op == "rebalance":
        assert 0 < summary["replica_moves"] <= 20
        assert any("budget 20 replica(s)" in n for n in summary["notes"])
    if op == "add-brokers":
        assert summary["replica_moves"] > 0
        moved = json.loads((out / "plan.json").read_text())["partitions"]
        before = json.loads((out / "rollback.json").read_text())["partitions"]
        assert all(set(a["replicas"]) - set(b["replicas"]) <= {9} for a, b in zip(moved, before))


@pytest.mark.parametrize("argv,fragment", [
    (("rebalance", "--max-replicas-moved", "-1"), "--max-replicas-moved -1"),
    (("rebalance", "--max-bytes-moved", "-5"), "--max-bytes-moved: '-5' is not a size"),
    (("rebalance", "--target-leader-spread", "-2"), "--target-leader-spread -2"),
    (("rebalance", "--target-bytes-spread", "-0.1"), "--target-bytes-spread"),
    (("add-brokers", "--brokers", "42"), "not registered"),
    (("elect", "--batch-size", "0"), "--batch-size"),
    (("delete", "--topics", "no-such-topic"), "no-such-topic"),
    (("reassign", "--reassignment-json-file", "/nonexistent/x.json"), "does not exist"),
])
def test_bad_input_is_one_clear_error_and_nothing_is_written(files: Path, argv, fragment: str) -> None:
    out = files / f"bad-{argv[0]}-{abs(hash(argv))}"
    rc, stdout, stderr = run("plan", *argv, "--snapshot", str(files / "snap.jsonl"), "--engine", "driver",
                             "--out", str(out))
    assert rc == 1, (stdout, stderr)
    assert fragment in stderr and stderr.count("Error") == 1
    assert not out.exists() or not (set(p.name for p in out.iterdir()) & ARTIFACTS)
