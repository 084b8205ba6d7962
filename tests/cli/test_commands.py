"""The CLI end to end on a real ZooKeeper: happy paths, dry runs, and a table of bad inputs.

Every bad input must print one ``Error:`` line naming the problem, exit non-zero, and leave
ZooKeeper exactly as it was (compared with plain kazoo).
"""

import json
import threading
import time

import pytest

from cli.main import main
from kafka_zk.audit import AuditLog
from kafka_sim.zookeeper_server import free_port
from tests.zk_helpers import read_json, register_brokers, tree


@pytest.fixture
def cluster(zk):
    register_brokers(zk, {0: "a", 1: "b", 2: "c"})
    zk.create("/brokers/topics/my-topic", b'{"version":1,"partitions":{"0":[0,1],"1":[1,2]}}')
    zk.create("/config/topics/my-topic", b'{"version":1,"config":{"flush.messages":"1"}}', makepath=True)
    zk.create("/brokers/topics/to_pic", b'{"version":1,"partitions":{"0":[0]}}')
    zk.create("/brokers/topics/__consumer_offsets", b'{"version":1,"partitions":{"0":[0]}}')
    for p, leader, isr in ((0, 0, [0, 1]), (1, 1, [1])):
        zk.create(f"/brokers/topics/my-topic/partitions/{p}/state", json.dumps(
            {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}).encode(),
            makepath=True)
    return zk


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topics_happy_path(cluster, zk_connect, capsys, tmp_path):
    zk = cluster
    Z = ["--zookeeper", zk_connect]
    rc, out, _ = run(capsys, "topics", *Z, "--create", "--topic", "new", "--partitions", "3",
                     "--replication-factor", "2", "--config", "retention.ms=1000",
                     "--audit-log", str(tmp_path / "audit.jsonl"), "--run-id", "r9")
    assert rc == 0 and out.strip() == "Created topic new."
    assert read_json(zk, "/config/topics/new") == {"version": 1, "config": {"retention.ms": "1000"}}
    assert len(read_json(zk, "/brokers/topics/new")["partitions"]) == 3
    assert [(r.op, r.run_id, r.task) for r in AuditLog.read(tmp_path / "audit.jsonl")] == \
        [("create", "r9", "topics-create")] * 2
    rc, out, _ = run(capsys, "topics", *Z, "--list", "--exclude-internal")
    assert out.split() == ["my-topic", "new", "to_pic"]
    rc, out, _ = run(capsys, "topics", *Z, "--describe", "--topic", "my-topic")
    assert out == ("Topic: my-topic\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: flush.messages=1\n"
                   "\tTopic: my-topic\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1\n"
                   "\tTopic: my-topic\tPartition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
    rc, out, _ = run(capsys, "topics", *Z, "--describe", "--topic", "my-.*", "--under-replicated-partitions")
    assert out == "\tTopic: my-topic\tPartition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
    rc, out, _ = run(capsys, "topics", *Z, "--describe", "--topic", "my-topic", "--describe-format", "1.x")
    assert out.startswith("Topic:my-topic\tPartitionCount:2\tReplicationFactor:2\tConfigs:flush.messages=1\n")
    rc, out, _ = run(capsys, "topics", *Z, "--alter", "--topic", "new", "--partitions", "4")
    assert rc == 0 and "Adding partitions succeeded!" in out
    assert len(read_json(zk, "/brokers/topics/new")["partitions"]) == 4
    rc, out, _ = run(capsys, "topics", *Z, "--delete", "--topic", "new")
    assert rc == 0 and out.startswith("Topic new is marked for deletion.")
    assert zk.exists("/admin/delete_topics/new")
    rc, out, _ = run(capsys, "topics", *Z, "--list")
    assert "new - marked for deletion" in out.splitlines()
    assert run(capsys, "topics", *Z, "--list", "--topic", "zz.*") == (0, "", "")


def test_configs_throttle_and_elect_happy_paths(cluster, zk_connect, capsys, tmp_path):
    zk = cluster
    Z = ["--zookeeper", zk_connect]
    rc, out, _ = run(capsys, "configs", *Z, "--entity-type", "topics", "--entity-name", "my-topic", "--alter",
                     "--add-config", "retention.ms=5,cleanup.policy=[compact,delete]", "--delete-config",
                     "flush.messages")
    assert rc == 0 and out.strip() == "Completed Updating config for entity: topic 'my-topic'."
    assert read_json(zk, "/config/topics/my-topic")["config"] == {"retention.ms": "5",
                                                                  "cleanup.policy": "compact,delete"}
    rc, out, _ = run(capsys, "configs", *Z, "--entity-type", "topics", "--entity-name", "my-topic", "--describe")
    assert out.strip() == "Configs for topic 'my-topic' are cleanup.policy=compact,delete,retention.ms=5"  # Properties order
    rc, out, _ = run(capsys, "configs", *Z, "--entity-type", "brokers", "--entity-default", "--alter",
                     "--add-config", "follower.replication.throttled.rate=7")
    assert out.strip() == "Completed Updating config for entity: default brokers."

    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"my-topic","partition":0,"replicas":[2,1]}]}')
    rec = tmp_path / "throttles.json"
    before_cfg = read_json(zk, "/config/topics/my-topic")
    rc, out, _ = run(capsys, "throttle", *Z, "--set", "--reassignment-json-file", str(plan), "--throttle", "500",
                     "--record", str(rec))
    assert rc == 0 and rec.exists()
    cfg = read_json(zk, "/config/topics/my-topic")["config"]
    assert cfg["leader.replication.throttled.replicas"] == "0:0,0:1"
    assert cfg["follower.replication.throttled.replicas"] == "0:2"
    assert {b for b in ("0", "1", "2")
            if read_json(zk, f"/config/brokers/{b}")["config"].get("leader.replication.throttled.rate") == "500"} \
        == {"0", "1", "2"}
    rc, out, _ = run(capsys, "throttle", *Z, "--show")
    assert "topic my-topic: follower.replication.throttled.replicas=0:2" in out
    rc, out, _ = run(capsys, "throttle", *Z, "--remove", "--record", str(rec))
    assert rc == 0 and read_json(zk, "/config/topics/my-topic") == before_cfg
    assert all(read_json(zk, f"/config/brokers/{b}")["config"] == {} for b in ("0", "1", "2"))

    f = tmp_path / "elect.json"
    f.write_text('{"partitions":[{"topic":"my-topic","partition":1},{"topic":"nope","partition":0}]}')
    rc, out, _ = run(capsys, "elect", *Z, "--path-to-json-file", str(f))
    assert rc == 0
    assert "Skipping preferred replica leader election for partition nope-0 since it doesn't exist." in out
    assert read_json(zk, "/admin/preferred_replica_election") == {
        "version": 1, "partitions": [{"topic": "my-topic", "partition": 1}]}


def test_dry_runs_write_nothing_and_audit_planned_writes(cluster, zk_connect, capsys, tmp_path):
    zk = cluster
    before = tree(zk)
    Z = ["--zookeeper", zk_connect, "--dry-run", "--audit-log", str(tmp_path / "dry.jsonl")]
    rc, out, _ = run(capsys, "topics", *Z, "--create", "--topic", "x", "--partitions", "1",
                     "--replication-factor", "1")
    assert rc == 0 and "DRY RUN: would create /config/topics/x" in out
    assert "DRY RUN: would create /brokers/topics/x {\"version\":1,\"partitions\":{\"0\":" in out
    rc, out, _ = run(capsys, "topics", *Z, "--delete", "--topic", "my-topic")
    assert "DRY RUN: would create /admin/delete_topics/my-topic" in out
    rc, out, _ = run(capsys, "configs", *Z, "--entity-type", "brokers", "--entity-name", "1", "--alter",
                     "--add-config", "leader.replication.throttled.rate=10")
    assert "DRY RUN: would create /config/changes/config_change_" in out
    rc, out, _ = run(capsys, "elect", *Z, "--batch-partitions", "1")
    assert out.count("DRY RUN: would create /admin/preferred_replica_election") == 4
    assert tree(zk) == before
    recs = AuditLog.read(tmp_path / "dry.jsonl")
    assert len(recs) == 2 + 1 + 2 + 4 and all(r.dry_run for r in recs)


BIG_ASSIGNMENT = ",".join(["0"] * 120_000)


def _bad_cases(zk_connect, tmp_path):
    Z = ["--zookeeper", zk_connect]
    logdirs = tmp_path / "logdirs.json"
    logdirs.write_text('{"version":1,"partitions":[{"topic":"my-topic","partition":0,"replicas":[2,1],'
                       '"log_dirs":["/data/a","any"]}]}')
    missing = tmp_path / "missing.json"
    missing.write_text('{"version":1,"partitions":[{"topic":"my-topic","partition":7,"replicas":[2,1]}]}')
    good = tmp_path / "good.json"
    good.write_text('{"version":1,"partitions":[{"topic":"my-topic","partition":0,"replicas":[2,1]}]}')
    dup = tmp_path / "dup.json"
    dup.write_text('{"partitions":[{"topic":"my-topic","partition":1},{"topic":"my-topic","partition":1}]}')
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    create = ["topics", *Z, "--create", "--topic"]
    return [
        ([*create, "foo bar", "--partitions", "1", "--replication-factor", "1"], "contains one or more characters"),
        ([*create, "..", "--partitions", "1", "--replication-factor", "1"], "'..' is not allowed"),
        ([*create, "a" * 250, "--partitions", "1", "--replication-factor", "1"], "max allowed length 249"),
        ([*create, "x", "--partitions", "1", "--replication-factor", "1", "--config", "foo=1"],
         "Unknown topic config name: foo"),
        ([*create, "x", "--partitions", "1", "--replication-factor", "1", "--config", "retention.ms=abc"],
         "Not a number of type LONG"),
        ([*create, "x", "--partitions", "1", "--replication-factor", "1", "--config", "retention.ms"],
         "is not key=value"),
        ([*create, "x", "--partitions", "1", "--replication-factor", "4"],
         "Replication factor: 4 larger than available brokers: 3."),
        ([*create, "x", "--partitions", "1", "--replication-factor", "0"], "Replication factor must be larger than 0."),
        ([*create, "x", "--partitions", "0", "--replication-factor", "1"], "Number of partitions must be larger than 0."),
        ([*create, "x", "--replica-assignment", "0:0"], "may not contain duplicate entries: 0"),
        ([*create, "x", "--replica-assignment", "0:9"], "broker(s) 9 that are not registered"),
        ([*create, "x", "--replica-assignment", "0:1,2"], "Partition 1 has different replication factor"),
        ([*create, "my-topic", "--partitions", "1", "--replication-factor", "1"], "Topic 'my-topic' already exists."),
        ([*create, "to.pic", "--partitions", "1", "--replication-factor", "1"],
         "Topic 'to.pic' collides with existing topics: to_pic"),
        ([*create, "x", "--replication-factor", "1"], "Missing required argument(s) --partitions"),
        ([*create, "huge", "--replica-assignment", BIG_ASSIGNMENT], "split into batches"),
        (["topics", *Z, "--delete", "--topic", "nope"], "Topic 'nope' does not exist as expected"),
        (["topics", *Z, "--delete", "--topic", "__consumer_offsets"], "is a kafka internal topic"),
        (["topics", *Z, "--describe", "--topic", "nope"], "Topic 'nope' does not exist as expected"),
        (["topics", *Z, "--alter", "--topic", "my-topic", "--partitions", "1"], "can only be increased"),
        (["topics", *Z, "--alter", "--topic", "my-topic", "--config", "bogus=1"], "Unknown topic config name: bogus"),
        (["topics", *Z, "--list", "--topic", "("], "is not a valid regular expression"),
        (["configs", *Z, "--entity-type", "topics", "--entity-name", "my-topic", "--alter", "--delete-config",
          "retention.ms"], "Invalid config(s): retention.ms"),
        (["configs", *Z, "--entity-type", "topics", "--entity-name", "nope", "--alter", "--add-config",
          "retention.ms=1"], 'Topic "nope" does not exist.'),
        (["configs", *Z, "--entity-type", "brokers", "--entity-name", "abc", "--alter", "--add-config",
          "leader.replication.throttled.rate=1"], "must be a valid integer broker id"),
        (["configs", *Z, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config",
          "log.retention.ms=1"], "Unknown broker config name: log.retention.ms"),
        (["configs", *Z, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config",
          "leader.replication.throttled.rate=-1"], "Value must be at least 0"),
        (["configs", *Z, "--entity-type", "topics", "--entity-name", "my-topic", "--alter", "--add-config",
          "min.insync.replicas"], "is not key=value"),
        (["topics", "--zookeeper", "localhost", "--list"], "'localhost' is not host:port"),
        (["topics", "--zookeeper", f"127.0.0.1:{free_port()}", "--zk-timeout", "2", "--list"],
         "did not answer within 2s"),
        (["topics", "--zookeeper", zk_connect + "/nochroot", "--list"], "does not exist on"),
        (["throttle", *Z, "--set", "--reassignment-json-file", str(logdirs), "--throttle", "1", "--record",
          str(tmp_path / "r.json")], "log_dirs"),
        (["throttle", *Z, "--set", "--reassignment-json-file", str(missing), "--throttle", "1", "--record",
          str(tmp_path / "r.json")], "non-existent partitions: my-topic-7"),
        (["throttle", *Z, "--set", "--reassignment-json-file", str(good), "--throttle", "-1", "--record",
          str(tmp_path / "r.json")], "bytes per second"),
        (["elect", *Z, "--path-to-json-file", str(dup)], "contains duplicate partitions: my-topic-1"),
        (["elect", *Z, "--path-to-json-file", str(junk)], "Preferred replica election data is empty"),
    ]


def test_bad_inputs_fail_cleanly_and_write_nothing(cluster, zk_connect, capsys, tmp_path):
    zk = cluster
    cases = _bad_cases(zk_connect, tmp_path)
    assert len(cases) >= 25
    before = tree(zk)
    for argv, message in cases:
        rc, out, err = run(capsys, *argv)
        assert rc != 0, argv[:6]
        assert err.startswith("Error: ") and message in err, (argv[:6], err)
        assert len(err.strip().splitlines()) == 1, err
        assert tree(zk) == before, argv[:6]
    assert not (tmp_path / "r.json").exists()


def test_elect_waits_for_the_controller_between_batches(cluster, zk_connect, capsys):
    zk = cluster
    seen, stop = [], threading.Event()

    def controller():  # plays Kafka's controller: read the node, then delete it
        while not stop.is_set():
            try:
                data, _ = zk.get("/admin/preferred_replica_election")
            except Exception:  # noqa: BLE001 - not there yet
                stop.wait(0.02)
                continue
            seen.append(json.loads(data)["partitions"])
            zk.delete("/admin/preferred_replica_election")

    t = threading.Thread(target=controller)
    t.start()
    try:
        rc, out, err = run(capsys, "elect", "--zookeeper", zk_connect, "--batch-partitions", "2",
                           "--batch-timeout", "10")
    finally:
        deadline = time.monotonic() + 10
        while zk.exists("/admin/preferred_replica_election") and time.monotonic() < deadline:
            stop.wait(0.02)
        stop.set()
        t.join(timeout=10)
    assert rc == 0, err
    assert [len(b) for b in seen] == [2, 2]
    assert sorted((p["topic"], p["partition"]) for b in seen for p in b) == [
        ("__consumer_offsets", 0), ("my-topic", 0), ("my-topic", 1), ("to_pic", 0)]
    assert out.count("Successfully started preferred replica election") == 2
