"""A broker's bytes on disk mid-copy (``EmulatedCluster.disk_usage``, sampled at every poll of a
rehearsal): the sum of ``ReplicationModel.replica_bytes`` over the replicas it hosts — a follower
still copying counts what it copied so far, every other replica its partition's size — exactly."""

from __future__ import annotations

from kazoo.client import KazooClient

from kafka_zk.codecs import TopicPartition
from tests.kafka_sim.zk_read import wait_for

GIB = 1024 ** 3


def test_disk_usage_is_the_sum_of_every_replicas_bytes_while_followers_copy(make_cluster, zk: KazooClient):
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "a", 3: "b"}, network_rate=float(GIB), speed=1.0)
    cluster.create_topic("t", {0: [0, 1], 1: [1, 0], 2: [0, 1]})
    for p, size in ((0, 50 * GIB), (1, 30 * GIB), (2, 7 * GIB)):
        cluster.set_partition_size("t", p, size)
    cluster.wait_idle(30)
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":['
              b'{"topic":"t","partition":0,"replicas":[0,1,2]},'
              b'{"topic":"t","partition":1,"replicas":[1,0,3]},'
              b'{"topic":"t","partition":2,"replicas":[0,1,3]}]}')
    eng = cluster._engine
    wait_for(lambda: eng.call(lambda: bool(eng.model.flows())), what="the followers copying")

    def reference() -> dict[int, int]:
        used = {b: 0.0 for b in eng.brokers}
        for tp, pd in eng.model.parts.items():
            for b in pd.replicas:
                used[b] += eng.model.replica_bytes(tp, b) or 0.0
        return {b: int(v) for b, v in sorted(used.items())}

    with cluster.clock_held():
        got, want = cluster.disk_usage(), eng.call(reference)
        partial = eng.call(lambda: eng.model.replica_bytes(TopicPartition("t", 0), 2))
    assert got == want
    assert 0 <= partial < 50 * GIB, "broker 2 is mid-copy: the sample counts what it copied so far"
    assert got[0] == 87 * GIB and got[1] == 87 * GIB
