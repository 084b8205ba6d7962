"""Emulated brokers speak Kafka: registrations carry real listener ports; ApiVersions, Metadata,
ListOffsets and Fetch behave as a 2.4 broker's; a follower serves only what it has copied; a
killed broker stops answering and a restarted one listens on the same port again."""

import json

import pytest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest

from kafka_sim.wire.records import BATCH_BYTES, BATCH_RECORDS
from replica_verify.connection import BrokerConnection
from replica_verify.errors import BrokerUnreachable

FT = FetchRequest.FetchTopic
FP = FT.FetchPartition
LT = ListOffsetsRequest.ListOffsetsTopic
LP = LT.ListOffsetsPartition


def _conn(cluster, broker):
    return BrokerConnection("127.0.0.1", cluster.broker_port(broker), 5.0, f"broker {broker}").open()


def _fetch(conn, topic, partition, offset, replica_id=-2, max_wait_ms=10):
    req = FetchRequest(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 24,
                       isolation_level=0, topics=[FT(topic=topic, partitions=[
                           FP(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 24)])])
    return conn.send(req).responses[0].partitions[0]


def _list_offset(conn, topic, partition, ts):
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        LT(name=topic, partitions=[LP(partition_index=partition, timestamp=ts)])])
    return conn.send(req).topics[0].partitions[0]


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster(brokers={0: "a", 1: "b", 2: "c"})
    c.create_topic("t", {0: [0, 1, 2]}, sizes={0: 4 * BATCH_BYTES + 10})
    return c


def test_registration_metadata_and_offsets_come_from_the_listeners(cluster, zk):
    reg = json.loads(zk.get("/brokers/ids/1")[0])
    assert reg["port"] == cluster.broker_port(1) > 0
    assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.broker_port(1)}"]
    with _conn(cluster, 2) as conn:
        meta = conn.send(MetadataRequest(topics=None))
        assert {(b.node_id, b.port) for b in meta.brokers} == {(b, cluster.broker_port(b)) for b in (0, 1, 2)}
        (topic,) = meta.topics
        assert topic.name == "t" and topic.partitions[0].replica_nodes == [0, 1, 2]
        assert _list_offset(conn, "t", 0, -1).error_code == 6          # broker 2 is not the leader
    with _conn(cluster, 0) as conn:
        assert _list_offset(conn, "t", 0, -1).offset == 4 * BATCH_RECORDS
        assert _list_offset(conn, "t", 0, -2).offset == 0


def test_fetch_serves_batches_from_any_replica_to_a_debugging_consumer_only(cluster):
    with _conn(cluster, 1) as conn:
        p = _fetch(conn, "t", 0, 0)
        assert p.error_code == 0 and p.high_watermark == 4 * BATCH_RECORDS and len(p.records) > 0
        assert _fetch(conn, "t", 0, 0, replica_id=-1).error_code == 6       # consumers read the leader
        assert _fetch(conn, "t", 0, 5 * BATCH_RECORDS).error_code == 1      # past the log end
        empty = _fetch(conn, "t", 0, 4 * BATCH_RECORDS)
        assert empty.error_code == 0 and not empty.records
        assert _fetch(conn, "nope", 0, 0).error_code == 3


def test_a_stalled_follower_serves_only_what_it_copied(cluster, zk):
    cluster.stall_replica("t", 0, 2)
    assert cluster.wait_until(lambda: 2 not in json.loads(zk.get("/brokers/topics/t/partitions/0/state")[0])["isr"], 30)
    cluster.set_partition_size("t", 0, 8 * BATCH_BYTES)
    with _conn(cluster, 2) as follower, _conn(cluster, 0) as leader:
        assert _fetch(leader, "t", 0, 0).high_watermark == 8 * BATCH_RECORDS
        assert _fetch(follower, "t", 0, 0).high_watermark == 4 * BATCH_RECORDS
        assert _fetch(follower, "t", 0, 6 * BATCH_RECORDS).error_code == 1


def test_a_killed_broker_stops_answering_and_listens_again_on_restart(cluster):
    port = cluster.broker_port(2)
    conn = _conn(cluster, 2)
    cluster.kill_broker(2)
    with pytest.raises(BrokerUnreachable):
        _fetch(conn, "t", 0, 0)
    with pytest.raises(BrokerUnreachable, match="connection refused"):
        BrokerConnection("127.0.0.1", port, 5.0, "broker 2").open()
    cluster.restart_broker(2)
    assert cluster.broker_port(2) == port
    with _conn(cluster, 2) as again:
        assert _fetch(again, "t", 0, 0).error_code == 0
