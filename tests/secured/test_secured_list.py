"""``topics --list`` on a SASL cluster (ZooKeeper offering SASL without requiring it, Kafka's
znodes created with its ACLs) without credentials works as ``kafka-topics.sh --list`` does: it
reads only ``/brokers/topics`` (world-readable) and whether ``/admin/delete_topics/<t>`` exists,
never the creator-only ``/config/brokers``."""

import json

import pytest

from cli.main import main
from kafka_zk import acls
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from tests.secured.conftest import BROKER_SECRET, BROKER_USER, new_secured_chroot, sasl_client


@pytest.fixture(scope="module")
def sasl_optional_zk():
    with EmbeddedZooKeeper(sasl_users={BROKER_USER: BROKER_SECRET}, require_sasl=False) as server:
        yield server


def test_topics_list_without_credentials_reads_only_what_kafka_topics_reads(sasl_optional_zk, capsys):
    hosts = sasl_optional_zk.connect_string + new_secured_chroot(sasl_optional_zk)
    broker = sasl_client(hosts)
    try:
        for path, data in (("/brokers/topics/orders", {"version": 1, "partitions": {"0": [1]}}),
                           ("/brokers/topics/old", {"version": 1, "partitions": {"0": [1]}}),
                           ("/brokers/topics/__consumer_offsets", {"version": 1, "partitions": {"0": [1]}}),
                           ("/brokers/ids/1", {"version": 4, "host": "h", "port": 9092, "endpoints": [],
                                               "jmx_port": -1, "timestamp": "1"}),
                           ("/config/brokers/1", {"version": 1, "config": {"leader.replication.throttled.rate": "1"}}),
                           ("/admin/delete_topics/old", None)):
            parts = path.strip("/").split("/")
            for i in range(1, len(parts)):
                parent = "/" + "/".join(parts[:i])
                if broker.exists(parent) is None:
                    broker.create(parent, acl=acls.default_acls(parent, True))
            broker.create(path, json.dumps(data).encode() if data else b"", acl=acls.default_acls(path, True))
    finally:
        broker.stop()
        broker.close()
    assert main(["topics", "--zookeeper", hosts, "--list"]) == 0
    out, err = capsys.readouterr()
    assert out == "__consumer_offsets\nold - marked for deletion\norders\n" and err == ""
    assert main(["topics", "--zookeeper", hosts, "--list", "--exclude-internal", "--topic", "o.*"]) == 0
    assert capsys.readouterr().out == "old - marked for deletion\norders\n"
