"""The verification rounds against the emulator: a broker that dies after verification started
is a clear error naming it (the original waits for it forever); --max-rounds bounds a run."""

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.wire.records import BATCH_BYTES, BATCH_RECORDS, build_batch
from replica_verify.errors import BrokerUnreachable
from replica_verify.options import build_options
from replica_verify.verifier import verify


def test_a_broker_dying_mid_run_is_named_and_rounds_are_bounded(zk_connect):
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=50.0)
    with EmulatedCluster(zk_connect, spec) as c:
        c.create_topic("t", {0: [0, 1, 2], 1: [1, 2, 0]}, sizes={0: 8 * BATCH_BYTES, 1: 8 * BATCH_BYTES})
        batch = max(len(build_batch(0, "t", p, i)) for p in (0, 1) for i in range(8))
        one_batch = build_options(c.broker_list(), fetch_size=batch + 100, time=-2, max_wait_ms=200)
        summary = verify(one_batch, out=lambda line: None, max_rounds=3)
        assert summary.rounds == 3 and summary.ok
        assert summary.verified == {"t-0": 3 * BATCH_RECORDS, "t-1": 3 * BATCH_RECORDS}   # a batch a round
        assert summary.max_lag == 5 * BATCH_RECORDS

        def kill_on_start(line: str) -> None:
            if line.endswith("verification process is started."):
                c.kill_broker(2)
        with pytest.raises(BrokerUnreachable, match=r"broker 2 \(127\.0\.0\.1:\d+\)"):
            verify(one_batch, out=kill_on_start)
