"""The runbooks' data check (log end offsets and last batches of chosen replicas vs their
leaders) against the emulator: clean when equal, a diverged last batch named, a replica behind
its leader reported as lag, not as a mismatch."""

import json

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.wire.records import BATCH_BYTES, BATCH_RECORDS
from replica_verify.discovery import PartitionId
from replica_verify.tails import check_tails


def test_tails_match_differ_or_lag(zk_connect):
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=50.0)
    with EmulatedCluster(zk_connect, spec) as c:
        c.create_topics({"a": ({0: [0, 1, 2]}, {0: 3 * BATCH_BYTES}, None),
                         "b": ({0: [1, 2, 0]}, {0: 2 * BATCH_BYTES}, None)})
        endpoints = {b: ("127.0.0.1", c.broker_port(b)) for b in (0, 1, 2)}
        asked = [(PartitionId("a", 0), 1, 0), (PartitionId("a", 0), 2, 0), (PartitionId("b", 0), 0, 1)]
        assert [x.problem for x in check_tails(endpoints, asked, 5.0)] == [None, None, None]

        c.corrupt_record("a", 0, broker=2, offset=3 * BATCH_RECORDS - 1)     # in the last batch
        c.stall_replica("b", 0, 0)
        state = lambda: json.loads(c.tool_client.get("/brokers/topics/b/partitions/0/state")[0])  # noqa: E731
        assert c.wait_until(lambda: 0 not in state()["isr"], 30)
        c.set_partition_size("b", 0, 5 * BATCH_BYTES)
        checks = {(x.partition, x.replica): x for x in check_tails(endpoints, asked, 5.0)}
    assert checks[("a-0", 1)].problem is None
    bad = checks[("a-0", 2)]
    assert bad.problem.startswith(f"last batch differs from the leader's at offset {3 * BATCH_RECORDS - 1}")
    behind = checks[("b-0", 0)]
    assert behind.problem is None and behind.lag == 3 * BATCH_RECORDS

