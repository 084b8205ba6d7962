"""The emulator's process restart (the rolling_restart runbook's local action), with Kafka 2.4.1's timing.

Measured on the real 2.4.1 cluster (tests/vectors/real_kafka_2_4_1/d.json): SIGTERM moves the
broker's leaderships and drops it from the ISRs within a fraction of a second; its registration
goes ~1.1 s later when every leadership moved (16.2 s on the controlled-shutdown retry path:
tests/kafka_sim/test_restart_stop_and_rejoin_timing.py); the new process registers ~6-7.6 s after
it was started and is back in the ISRs ~1.7 s after that. The emulator replays that on its simulated clock, and the
same restart is reachable from another process as ``kafka-runbook sim fault restart BROKER``.
"""

from __future__ import annotations

import pytest

from kafka_sim.control import send_command
from kafka_sim.faults import CONTROLLED_SHUTDOWN_RETRY_S, SHUTDOWN_EXIT_S, START_TO_REGISTRATION_S
from kafka_zk.errors import InvalidInput
from tests.kafka_sim.command_server import serving_commands
from tests.kafka_sim.zk_read import state, wait_for


def _restart_times(cluster, zk, broker: int, restart) -> tuple[float, float, float]:
    """(leadership moved, registration gone, registered again) in simulated seconds after ``restart()``."""
    old = zk.exists(f"/brokers/ids/{broker}").czxid
    t0 = cluster.now()
    restart()
    wait_for(lambda: state(zk, "td", 0)["leader"] != broker, what="leadership moved by controlled shutdown")
    moved = cluster.now() - t0
    assert zk.exists(f"/brokers/ids/{broker}") is not None      # still registered while shutting down
    wait_for(lambda: zk.exists(f"/brokers/ids/{broker}") is None, what="registration gone")
    gone = cluster.now() - t0
    wait_for(lambda: (zk.exists(f"/brokers/ids/{broker}") or None) is not None, what="registered again")
    back = cluster.now() - t0
    assert zk.exists(f"/brokers/ids/{broker}").czxid > old
    return moved, gone, back


def test_a_restart_keeps_kafka_2_4_1_timing(make_cluster, zk):
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [0, 3], 1: [3, 0]})
    moved, gone, back = _restart_times(cluster, zk, 0, lambda: cluster.restart_process(0))
    assert moved < 2.0
    assert SHUTDOWN_EXIT_S <= gone < CONTROLLED_SHUTDOWN_RETRY_S     # every leadership moved: no retries
    assert back >= SHUTDOWN_EXIT_S + START_TO_REGISTRATION_S
    wait_for(lambda: state(zk, "td", 0)["isr"] == [3, 0] and state(zk, "td", 1)["isr"] == [3, 0], what="rejoin")
    assert state(zk, "td", 0)["leader"] == 3              # leadership comes back only by an election


def test_the_restart_is_a_fault_command_other_processes_send(make_cluster, zk):
    cluster = make_cluster(speed=20.0)
    cluster.move_controller(1)
    cluster.create_topic("td", {0: [2, 3]})
    with serving_commands(cluster):
        moved, gone, back = _restart_times(cluster, zk, 2, lambda: send_command(zk, "restart", {
            "broker": 2, "stop_s": 4.0, "start_s": 3.0}))
        assert 4.0 <= gone < CONTROLLED_SHUTDOWN_RETRY_S and back >= 7.0
        with pytest.raises(InvalidInput, match="stop_s -1"):
            send_command(zk, "restart", {"broker": 2, "stop_s": -1})
        cluster.kill_broker(3)
        with pytest.raises(InvalidInput, match="broker 3 is not running"):
            send_command(zk, "restart", {"broker": 3})
