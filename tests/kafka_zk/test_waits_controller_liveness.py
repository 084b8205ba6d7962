"""An admin node the controller does not consume: the wait's error says what was found of the
controller (issue 27 item 1) — none elected, elected but its broker gone, or alive — read from a
real ZooKeeper where the nodes are written by hand, as Kafka would leave them."""

from __future__ import annotations

import json

import pytest

from kafka_zk.waits import ZnodeNotConsumed, controller_liveness, wait_node_gone

NODE = "/admin/preferred_replica_election"


def _setup(zk, controller: int | None, registered: tuple[int, ...]) -> None:
    zk.create("/controller_epoch", b"7", makepath=True)
    for b in registered:
        zk.create(f"/brokers/ids/{b}", json.dumps({"version": 4, "host": "h", "port": 9092}).encode(),
                  makepath=True, ephemeral=True)
    if controller is not None:
        zk.create("/controller", json.dumps({"version": 1, "brokerid": controller, "timestamp": "1"}).encode(),
                  ephemeral=True)
    zk.create(NODE, b'{"version":1,"partitions":[]}', makepath=True)


@pytest.mark.parametrize("controller, registered, expected", [
    (None, (1, 2), "no controller is elected (/controller is absent, controller epoch 7)"),
    (3, (1, 2), "the controller is broker 3 (epoch 7) but /brokers/ids/3 is not registered: it is dead"),
    (2, (1, 2), "the controller is broker 2 (epoch 7), registered: it is alive but has not acted on the node"),
])
def test_a_node_not_consumed_names_what_was_found_of_the_controller(zk, controller, registered, expected) -> None:
    _setup(zk, controller, registered)
    assert controller_liveness(zk).startswith(expected)
    with pytest.raises(ZnodeNotConsumed) as err:
        wait_node_gone(zk, NODE, timeout=0.2, poll=0.05)
    assert f"{NODE} still exists after 0.2s" in str(err.value) and expected in str(err.value)
