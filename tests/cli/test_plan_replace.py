"""``kafka-runbook plan replace --brokers 6 --with 7`` ("replace 6 with 7") and ``plan decommission``
of a dead broker, read from a real ZooKeeper: the new broker takes exactly 6's replicas in 6's
position of each list; a dead 6 (not registered, still listed) is planned from the live replicas,
its partitions with no live in-sync replica left out and named; bad pairs are refused naming the fix."""

from __future__ import annotations

import json
import os

from cli.main import main
from tests.zk_helpers import create_topic_by_hand, register_brokers


def _cluster(zk, registered: range | list[int]) -> dict[int, list[int]]:
    """Brokers in racks a/b/c (b % 3); topic t of 12 partitions RF 2 on 1-6 (rack-aware), broker 7 empty."""
    register_brokers(zk, {b: "abc"[b % 3] for b in registered})
    assignment = {p: [1 + p % 6, 1 + (p + 1) % 6] for p in range(12)}
    create_topic_by_hand(zk, "t", assignment)
    return assignment


def _plan(out: str) -> dict[int, list[int]]:
    doc = json.load(open(os.path.join(out, "plan.json")))
    return {e["partition"]: e["replicas"] for e in doc["partitions"]}


def test_replace_puts_the_new_broker_in_the_old_ones_position(zk, zk_connect, tmp_path, capsys) -> None:
    before = _cluster(zk, range(1, 8))
    out = str(tmp_path / "plan")
    for old, new, says in (("3", "4", "new broker 4 already holds a replica"),    # 3 and 4 share t-2
                           ("3", "3", "must differ from the one it replaces"),
                           ("3", "9", "not registered"),
                           ("3,4", "7", "1 broker(s) [7] for 2 in --brokers")):
        assert main(["plan", "replace", "--zookeeper", zk_connect, "--brokers", old, "--with", new,
                     "--engine", "driver", "--out", out]) == 1
        err = capsys.readouterr().err
        assert says in err, err
        assert not os.path.exists(os.path.join(out, "plan.json"))
    capsys.readouterr()
    out = str(tmp_path / "plan-ok")
    # 7 is in rack 'b' (7 % 3 = 1), as broker 4 is: replace 4 with 7
    assert main(["plan", "replace", "--zookeeper", zk_connect, "--brokers", "4", "--with", "7", "--engine", "driver",
                 "--out", out]) == 0
    planned = _plan(out)
    assert planned == {p: [7 if b == 4 else b for b in r] for p, r in before.items() if 4 in r}
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["operation"] == "replace" and summary["replica_moves"] == sum(4 in r for r in before.values())


def test_a_dead_broker_is_planned_from_the_live_replicas(zk, zk_connect, tmp_path) -> None:
    before = _cluster(zk, [1, 2, 3, 5, 6, 7])                 # 4 is down: not registered, still listed
    zk.set("/brokers/topics/t/partitions/3/state", json.dumps({   # its only in-sync replica was on 4
        "controller_epoch": 1, "leader": -1, "version": 1, "leader_epoch": 1, "isr": [4]}).encode())
    out = str(tmp_path / "plan")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "4", "--engine", "driver",
                 "--out", out]) == 0
    summary = json.load(open(os.path.join(out, "summary.json")))
    on_4 = [p for p, r in before.items() if 4 in r]
    assert summary["dead_brokers"] == {"4": len(on_4) - 1}
    assert [(s["topic"], s["partition"]) for s in summary["stranded"]] == [("t", 3)]
    assert sorted(_plan(out)) == [p for p in on_4 if p != 3]
    throttled = {b for w in json.load(open(os.path.join(out, "throttles.json")))["waves"] for b in w["brokers"]}
    assert 4 not in throttled
    out2 = str(tmp_path / "plan-replace")
    assert main(["plan", "replace", "--zookeeper", zk_connect, "--brokers", "4", "--with", "7", "--engine", "driver",
                 "--out", out2]) == 0
    assert _plan(out2) == {p: [7 if b == 4 else b for b in before[p]] for p in on_4 if p != 3}
