"""Simulated time does not depend on how promptly the host runs the emulator (kafka_sim/clock.py).

The engine lets the clock run only while it waits, and no further than its next due event; and it
waits for the watches its own writes fire (a leader's ISR write → the controller's watch on that
state znode) with the clock paused. So a move's simulated duration is the model's, whatever the
speed: at ×200,000 one wall millisecond is 200 simulated seconds, and before these two rules the
same moves ended minutes apart between runs on a loaded host (the rehearsal fidelity test's waves
off by 18 %).
"""

from __future__ import annotations

import time

import pytest

from kafka_sim.clock import SimClock
from tests.kafka_sim.test_reassign_fixed_cost import _span_of_one_node

MB = 1024 * 1024


def test_the_clock_stops_at_the_engines_next_due_event_however_late_it_wakes():
    clock = SimClock(speed=10_000.0)
    clock.pause()
    clock.resume(until=5.0)
    time.sleep(0.01)                       # 100 simulated seconds of wall time: the engine woke late
    assert clock.now() == 5.0
    clock.pause()
    assert clock.now() == 5.0
    clock.resume(until=2.0)                # a due time already behind: never backwards
    assert clock.now() >= 5.0
    clock.pause()
    clock.skip(30.0)
    assert clock.now() == pytest.approx(35.0)


def _moves_span(make_cluster, zk, speed: float) -> float:
    cluster = make_cluster(speed=speed, network_rate=100 * MB)
    cluster.create_topic("w", {p: [0, 1] for p in range(6)}, sizes={p: (p + 1) * 300 * MB for p in range(6)})
    doc = {"version": 1, "partitions": [{"topic": "w", "partition": p, "replicas": [2, 3]} for p in range(6)]}
    t0, end = _span_of_one_node(cluster, zk, doc)
    cluster.stop()
    for child in zk.get_children("/"):             # an empty chroot for the next cluster
        zk.delete("/" + child, recursive=True)
    return end - t0


def test_the_same_moves_take_the_same_simulated_time_at_x500_and_x200000(make_cluster, zk):
    slow = _moves_span(make_cluster, zk, 500.0)
    fast = _moves_span(make_cluster, zk, 200_000.0)
    assert slow > 40                                           # 6.3 GB over 100 MB/s links: a real copy
    assert fast == pytest.approx(slow, rel=0.01), (fast, slow)
