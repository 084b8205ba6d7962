"""The write gate, the CLI and the emulator on a ZooKeeper that requires SASL, with set_acl.

Everything is read back with plain kazoo: the ACL of every node we (or the emulated brokers)
created equals what Kafka 2.4 sets; an unauthenticated session and a wrong password are refused
with a clear message within the connect timeout; another principal reads but cannot write.
"""

from __future__ import annotations

import json

import pytest
from kazoo.exceptions import NoAuthError

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from kafka_zk.connect import close, connect
from kafka_zk.errors import ZkAuthFailed
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.zk_auth import DIGEST_MD5, ZkCredentials
from tests.secured.conftest import (BROKER, BROKER_SECRET, JAAS_CLIENT, READER, all_acls, expected_acls,
                                    sasl_client)

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard

RACKS = {1: "a", 2: "b", 3: "c"}


def test_every_node_the_gate_creates_carries_kafka_acls_and_sets_keep_them(secured_zk, secured_chroot, szk):
    client = connect(secured_zk.connect_string + secured_chroot, credentials=BROKER)
    try:
        w = ZkWriter(client, authority=KEYBOARD)
        topic = json.dumps({"version": 2, "partitions": {"0": [1, 2]}, "adding_replicas": {},
                            "removing_replicas": {}}).encode()
        w.create("/brokers/topics/t1", topic)                       # parents /brokers, /brokers/topics too
        w.write_config("topics", "t1", {"retention.ms": "1000"})     # /config/topics/t1 + a notification
        w.write_config("brokers", "1", {"leader.replication.throttled.rate": "100"})   # sensitive root
        w.write_config("users", "alice", {"producer_byte_rate": "1024"})                # sensitive root
        w.create("/admin/delete_topics/t1", None)
        reassign = json.dumps({"version": 1, "partitions": [{"topic": "t1", "partition": 0,
                                                             "replicas": [2, 1]}]}).encode()
        w.create("/admin/reassign_partitions", reassign)
        before = szk.get_acls("/config/topics/t1")[0]
        w.set("/config/topics/t1", json.dumps({"version": 1, "config": {"retention.ms": "5"}}).encode())
    finally:
        close(client)
    found = all_acls(szk)
    found.pop("/")  # the chroot: created by the fixture
    assert "/config/users/alice" in found and "/config/brokers/1" in found and "/config/changes" in found
    assert {p: acl for p, acl in found.items()} == {p: expected_acls(p) for p in found}
    assert found["/config/users"] == expected_acls("/config/users") and len(found["/config/users"]) == 1
    assert szk.get_acls("/config/topics/t1")[0] == before


def test_unauthenticated_session_and_wrong_password_are_refused_clearly(secured_zk, secured_chroot):
    hosts = secured_zk.connect_string + secured_chroot
    with pytest.raises(ZkAuthFailed, match="refused an unauthenticated session.*requires authentication"):
        connect(hosts, timeout=5)
    wrong = ZkCredentials(DIGEST_MD5, username="kafka", password="not-the-password")
    with pytest.raises(ZkAuthFailed, match="refused the login of SASL DIGEST-MD5 user 'kafka'") as info:
        connect(hosts, timeout=5, credentials=wrong)
    assert "not-the-password" not in str(info.value)


def test_another_principal_reads_kafka_nodes_but_cannot_write_them(secured_zk, secured_chroot, szk):
    client = connect(secured_zk.connect_string + secured_chroot, credentials=BROKER)
    try:
        ZkWriter(client, authority=KEYBOARD).write_config("topics", "t", {"retention.ms": "1"})
        ZkWriter(client, authority=KEYBOARD).write_config("users", "u", {"producer_byte_rate": "1"})
    finally:
        close(client)
    reader = sasl_client(secured_zk.connect_string + secured_chroot, READER)
    try:
        assert json.loads(reader.get("/config/topics/t")[0])["config"] == {"retention.ms": "1"}
        with pytest.raises(NoAuthError):
            reader.set("/config/topics/t", b"{}")
        with pytest.raises(NoAuthError):
            reader.create("/admin/reassign_partitions", b"{}", makepath=True)
        with pytest.raises(NoAuthError):
            reader.get("/config/users/u")          # sensitive: no world read
    finally:
        reader.stop()
        reader.close()


def test_cli_writes_on_a_secured_cluster_and_the_emulated_controller_acts_on_them(
        secured_zk, secured_chroot, szk, tmp_path, capsys):
    from cli.main import main

    jaas = tmp_path / "client_jaas.conf"
    jaas.write_text(JAAS_CLIENT)
    audit = tmp_path / "audit.jsonl"
    hosts = secured_zk.connect_string + secured_chroot
    common = ["--zookeeper", hosts, "--zk-jaas", str(jaas), "--zk-set-acl", "--audit-log", str(audit)]
    with EmulatedCluster(hosts, ClusterSpec(brokers=RACKS, seed=0), credentials=BROKER) as cluster:
        assert main(["topics", "--create", "--topic", "cli-t", "--partitions", "2", "--replication-factor", "2",
                     *common]) == 0
        assert cluster.wait_until(lambda: szk.exists("/brokers/topics/cli-t/partitions/1/state"), 30)
        assert main(["configs", "--alter", "--entity-type", "topics", "--entity-name", "cli-t",
                     "--add-config", "retention.ms=1000", *common]) == 0
        plan = tmp_path / "plan.json"
        current = json.loads(szk.get("/brokers/topics/cli-t")[0])["partitions"]
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "cli-t", "partition": int(p), "replicas": [r for r in (1, 2, 3) if r not in rs][:1] + rs[:1]}
            for p, rs in current.items()]}))
        assert main(["reassign", "--execute", "--reassignment-json-file", str(plan), *common]) == 0
        assert cluster.wait_until(lambda: szk.exists("/admin/reassign_partitions") is None, 60)
        assert main(["elect", *common]) == 0
        assert cluster.wait_until(lambda: szk.exists("/admin/preferred_replica_election") is None, 60)
        assert main(["topics", "--delete", "--topic", "cli-t", *common]) == 0
        assert cluster.wait_until(lambda: szk.exists("/brokers/topics/cli-t") is None
                                  and szk.get_children("/admin/delete_topics") == [], 60)
        found = all_acls(szk)
    found.pop("/")
    assert found == {p: expected_acls(p) for p in found}
    assert {r.op for r in AuditLog.read(audit)} >= {"create", "set"}
    out = capsys.readouterr()
    for text in (out.out, out.err, audit.read_text()):
        assert BROKER_SECRET not in text


def test_the_bulk_reader_does_not_open_unauthenticated_sessions_for_a_sasl_client():
    from kazoo.client import KazooClient

    from kafka_zk import bulk_reader

    client = KazooClient(hosts="127.0.0.1:1", **BROKER.kazoo_kwargs())   # never started
    assert bulk_reader._credentials(client) is None
    digest = KazooClient(hosts="127.0.0.1:1", auth_data=[("digest", "u:p")])
    assert bulk_reader._credentials(digest) == [("digest", "u:p")]
