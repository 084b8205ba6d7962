"""``kafka-runbook plan --zookeeper`` leaves the cluster's retiring brokers out as destinations, as
the runbooks' plan step does — from the runbooks' own file by default (``--retiring-file`` names
another, ``--ignore-retiring`` skips it): a drained broker gets no replica back, the summary
says which broker was excluded and why, a retiring broker that still holds replicas is refused with
nothing written, and a decommission may still remove a retiring broker."""

from __future__ import annotations

import json
import os

import pytest

from cli.main import main
from kafka_zk.retiring import RetiringFile
from tests.zk_helpers import create_topic_by_hand, register_brokers

CLUSTER = "retiring-cluster-1"


def _cluster(zk, holder: int | None = None) -> None:
    """Brokers 1-7 in racks a/b/c, broker 7 empty (drained); 2 topics x 12 partitions RF 2 on 1-6,
    one replica on ``holder`` when given; ``/cluster/id`` as Kafka writes it."""
    register_brokers(zk, {b: "abc"[b % 3] for b in range(1, 8)})
    zk.create("/cluster/id", json.dumps({"version": "1", "id": CLUSTER}).encode(), makepath=True)
    for t in range(2):
        assignment = {p: [1 + (p + t) % 6, 1 + (p + t + 1) % 6] for p in range(12)}
        if holder is not None and t == 0:
            assignment[0] = [holder, assignment[0][1]]
        create_topic_by_hand(zk, f"t{t}", assignment)


def _retiring(tmp_path, brokers: list[int]) -> str:
    f = RetiringFile.load(tmp_path / "retiring_brokers.json")
    f.add(CLUSTER, brokers, by="decommission_brokers/manual__1", why="drained by a decommission")
    f.save()
    return str(tmp_path / "retiring_brokers.json")


def _targets(out: str) -> set[int]:
    plan = json.load(open(os.path.join(out, "plan.json")))
    return {b for entry in plan["partitions"] for b in entry["replicas"]}


def test_a_retiring_broker_receives_no_replica_and_the_summary_says_why(zk, zk_connect, tmp_path, capsys) -> None:
    _cluster(zk)
    retiring = _retiring(tmp_path, [7])
    out = str(tmp_path / "plan")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "6", "--engine", "driver",
                 "--retiring-file", retiring, "--out", out]) == 0
    printed = capsys.readouterr().out
    assert 7 not in _targets(out) and 6 not in _targets(out)
    assert "Excluded as a destination: broker 7: retiring since" in printed
    assert "drained by a decommission" in printed
    # ignoring the retiring brokers, the empty broker 7 is the natural destination: the exclusion kept it out
    out2 = str(tmp_path / "plan-without")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "6", "--engine", "driver",
                 "--ignore-retiring", "--out", out2]) == 0
    assert 7 in _targets(out2)


def test_without_a_flag_the_runbooks_retiring_file_is_read(zk, zk_connect, tmp_path, capsys, monkeypatch) -> None:
    """Issue 39: no --retiring-file, the runbooks' file is read ($KAFKA_RUNBOOKS_RETIRING_FILE, else
    $KAFKA_RUNBOOKS_RUN_ROOT/retiring_brokers.json): a drained broker gets nothing by default."""
    _cluster(zk)
    _retiring(tmp_path, [7])
    monkeypatch.delenv("KAFKA_RUNBOOKS_RETIRING_FILE", raising=False)
    monkeypatch.setenv("KAFKA_RUNBOOKS_RUN_ROOT", str(tmp_path))
    out = str(tmp_path / "plan")
    assert main(["plan", "change-rf", "--topics", "t0,t1", "--replication-factor", "3", "--zookeeper", zk_connect,
                 "--engine", "driver", "--out", out]) == 0, capsys.readouterr().err
    assert _targets(out) and 7 not in _targets(out)
    assert "Excluded as a destination: broker 7: retiring since" in capsys.readouterr().out
    assert main(["plan", "rebalance", "--zookeeper", zk_connect, "--engine", "driver", "--ignore-retiring",
                 "--retiring-file", str(tmp_path / "retiring_brokers.json"), "--out", str(tmp_path / "p2")]) == 1
    assert "contradict each other" in capsys.readouterr().err


def test_a_retiring_broker_holding_replicas_is_refused_with_nothing_written(zk, zk_connect, tmp_path,
                                                                            capsys) -> None:
    _cluster(zk, holder=7)
    retiring = _retiring(tmp_path, [7])
    out = str(tmp_path / "plan")
    assert main(["plan", "rebalance", "--zookeeper", zk_connect, "--engine", "driver",
                 "--retiring-file", retiring, "--out", out]) == 1
    err = capsys.readouterr().err
    assert "broker 7 is retiring" in err and "still holds 1 replica(s)" in err
    assert "kafka-runbook retiring release --broker 7" in err
    assert not os.path.exists(os.path.join(out, "plan.json"))
    # the decommission removing it is allowed: broker 7 is emptied, not excluded
    out2 = str(tmp_path / "decommission")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "7", "--engine", "driver",
                 "--retiring-file", retiring, "--out", out2]) == 0
    assert 7 not in _targets(out2)


def test_the_retiring_file_needs_zookeeper(tmp_path, capsys) -> None:
    snap = tmp_path / "snap.jsonl"
    snap.write_text("")
    assert main(["plan", "rebalance", "--snapshot", str(snap), "--retiring-file", str(tmp_path / "r.json"),
                 "--out", str(tmp_path / "p")]) == 1
    assert "--retiring-file applies with --zookeeper" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "p")
    assert main(["plan", "rebalance", "--snapshot", str(snap), "--ignore-retiring", "--out", str(tmp_path / "p")]) == 1
    assert "--ignore-retiring applies with --zookeeper" in capsys.readouterr().err


@pytest.mark.parametrize("operation", [     # rebalance: tests/dags/test_retiring_brokers.py
    ["change-rf", "--topics", "t0,t1", "--replication-factor", "3"],
    ["add-brokers", "--brokers", "8"],
])
def test_every_data_moving_plan_leaves_a_drained_broker_out(zk, zk_connect, tmp_path, capsys,
                                                            operation: list[str]) -> None:
    """Beside the decommission: each other plan that picks destinations itself (the empty broker 7 is
    what a replication-factor raise or an add-brokers spill would choose) gives it
    nothing while it is retiring, and names it in the summary."""
    _cluster(zk)
    if operation[0] == "add-brokers":
        register_brokers(zk, {8: "c"})
    retiring = _retiring(tmp_path, [7])
    out = str(tmp_path / "plan")
    assert main(["plan", *operation, "--zookeeper", zk_connect, "--engine", "driver",
                 "--retiring-file", retiring, "--out", out]) == 0, capsys.readouterr().err
    assert _targets(out) and 7 not in _targets(out)
    assert "Excluded as a destination: broker 7: retiring since" in capsys.readouterr().out


def test_a_move_onto_a_retiring_broker_is_refused_naming_it(zk, zk_connect, tmp_path, capsys) -> None:
    """move-topics names its broker set: a retiring broker in it is refused as retiring (not as "not
    registered", what the planner, which never sees it, would say), nothing planned."""
    _cluster(zk)
    retiring = _retiring(tmp_path, [7])
    out = str(tmp_path / "plan")
    code = main(["plan", "move-topics", "--topics", "t0", "--brokers", "1,2,7", "--zookeeper", zk_connect,
                 "--engine", "driver", "--retiring-file", retiring, "--out", out])
    err = capsys.readouterr().err
    assert code == 1 and "--brokers: broker(s) [7] are retiring (broker 7: retiring since" in err, err
    assert "kafka-runbook retiring release --broker 7" in err and "not registered" not in err
    assert not os.path.exists(os.path.join(out, "plan.json"))
