"""``kafka-runbook reassign`` against a real ZooKeeper: generate, execute (throttled), verify."""

from __future__ import annotations

import json

from cli.main import main
from tests.zk_helpers import create_topic_by_hand, read_json, register_brokers, tree


def _json_after(text: str, header: str) -> dict:
    lines = text.splitlines()
    i = lines.index(header)
    return json.loads(next(line for line in lines[i + 1:] if line.startswith("{")))


def test_generate_is_least_movement_and_writes_nothing(zk, zk_connect, tmp_path, capsys) -> None:
    register_brokers(zk, {0: None, 1: None, 2: None, 3: None})
    create_topic_by_hand(zk, "foo", {0: [0, 1], 1: [1, 2], 2: [2, 3]})
    f = tmp_path / "topics.json"
    f.write_text(json.dumps({"version": 1, "topics": [{"topic": "foo"}]}))
    before = tree(zk)
    assert main(["reassign", "--zookeeper", zk_connect, "--generate", "--topics-to-move-json-file", str(f),
                 "--broker-list", "0,2,3,9"]) == 0
    out = capsys.readouterr().out
    current = _json_after(out, "Current partition replica assignment")
    proposed = _json_after(out, "Proposed partition reassignment configuration")
    assert [e["replicas"] for e in current["partitions"]] == [[0, 1], [1, 2], [2, 3]]
    new = {e["partition"]: e["replicas"] for e in proposed["partitions"]}
    assert new[2] == [2, 3] and 0 in new[0] and 2 in new[1]          # kept what is already allowed
    assert all(1 not in r and set(r) <= {0, 2, 3} for r in new.values())
    assert tree(zk) == before
    assert main(["reassign", "--zookeeper", zk_connect, "--generate", "--topics-to-move-json-file", str(f),
                 "--broker-list", "0,0"]) == 1
    assert "duplicate" in capsys.readouterr().err


def test_execute_throttled_then_verify_clears_throttles(zk, zk_connect, tmp_path, capsys) -> None:
    register_brokers(zk, {0: None, 1: None, 2: None})
    create_topic_by_hand(zk, "foo", {0: [0, 1], 1: [1, 2]})
    f = tmp_path / "plan.json"
    f.write_text(json.dumps({"version": 1, "partitions": [{"topic": "foo", "partition": 0, "replicas": [2, 1]}]}))
    assert main(["reassign", "--zookeeper", zk_connect, "--execute", "--reassignment-json-file", str(f),
                 "--throttle", "1000"]) == 0
    out = capsys.readouterr().out
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "Successfully started partition reassignment(s) for foo-0" in out
    assert read_json(zk, "/admin/reassign_partitions") == {
        "version": 1, "partitions": [{"topic": "foo", "partition": 0, "replicas": [2, 1]}]}
    cfg = read_json(zk, "/config/topics/foo")["config"]
    assert cfg["leader.replication.throttled.replicas"] == "0:0,0:1"
    assert cfg["follower.replication.throttled.replicas"] == "0:2"
    # a second execute is refused while the znode exists, nothing changes
    snapshot = tree(zk)
    assert main(["reassign", "--zookeeper", zk_connect, "--execute", "--reassignment-json-file", str(f)]) == 1
    assert "existing partition assignment" in capsys.readouterr().err and tree(zk) == snapshot
    assert main(["reassign", "--zookeeper", zk_connect, "--verify", "--reassignment-json-file", str(f)]) == 0
    assert capsys.readouterr().out == ("Status of partition reassignment: \n"       # Kafka 2.4.1's lines
                                       "Reassignment of partition foo-0 is still in progress\n")
    assert main(["reassign", "--zookeeper", zk_connect, "--verify", "--reassignment-json-file", str(f),
                 "--verify-format", "2.6"]) == 0
    assert "Reassignment of partition foo-0 is still in progress." in capsys.readouterr().out
    # what the controller does at the end (docs/zookeeper.md §2.7.3), written by hand here
    zk.set("/brokers/topics/foo", json.dumps({"version": 1, "partitions": {"0": [2, 1], "1": [1, 2]}}).encode())
    zk.delete("/admin/reassign_partitions")
    assert main(["reassign", "--zookeeper", zk_connect, "--verify", "--reassignment-json-file", str(f)]) == 0
    out = capsys.readouterr().out
    assert out == ("Status of partition reassignment: \n"
                   "Reassignment of partition foo-0 completed successfully\n"
                   "Throttle was removed.\n")
    cfg = (read_json(zk, "/config/topics/foo") or {}).get("config", {})
    assert "leader.replication.throttled.replicas" not in cfg
    assert all("replication.throttled.rate" not in k
               for b in (0, 1, 2) for k in ((read_json(zk, f"/config/brokers/{b}") or {}).get("config") or {}))
