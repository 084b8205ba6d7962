"""A follower whose broker died with the controller is dropped by its leader after the lag time.

When the killed broker is the active controller, the new controller does not remove the dead
broker's follower replicas from ISRs at failover; in Kafka the partition leaders shrink the ISR
once the follower has not fetched for replica.lag.time.max.ms (docs/zookeeper.md §2.6).
"""

import json

from kafka_sim.cluster import ClusterSpec, EmulatedCluster


def _state(zk, topic, p):
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])


def test_dead_controller_follower_leaves_isr_after_lag_time(zk_connect, zk):
    with EmulatedCluster(zk_connect, ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=20.0)).start() as cluster:
        ctrl = cluster.controller_id()
        leader = next(b for b in (0, 1, 2) if b != ctrl)
        follower_of = [leader, ctrl] + [b for b in (0, 1, 2) if b not in (leader, ctrl)]
        cluster.create_topic("t", {0: follower_of})
        assert set(_state(zk, "t", 0)["isr"]) == {0, 1, 2}
        epoch_before = _state(zk, "t", 0)["leader_epoch"]
        cluster.kill_broker(ctrl)
        assert cluster.wait_until(lambda: ctrl not in _state(zk, "t", 0)["isr"], timeout=20)
        state = _state(zk, "t", 0)
        assert state["leader"] == leader
        assert state["leader_epoch"] == epoch_before       # leader-driven ISR change: no epoch bump
        assert ctrl not in state["isr"] and len(state["isr"]) == 2
