"""The roll rides out a ZooKeeper outage as the wave executor does (issue 39).

On a private ZooKeeper server (its own data dir, so stopping it touches no other test) and the
emulator as 6 brokers with data: the server is stopped for 6 s right when a broker of the roll has
deregistered for its restart, then started again on the same port and data (every session resumes).
The roll waits for its session (bounded), then the registration gate it was at goes on: every
broker restarted exactly once (the emulator's record of process starts), every leadership back, the
batch and the report say an outage was waited out. An outage longer than the bound stops the roll at
that gate, named, the batch failed with the gate recorded; resuming it finishes without restarting
the broker again.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from procedures.restart.gates import registration_czxid
from procedures.batches.book import BatchState
from procedures.restart.plan import RestartPlan
from procedures.restart.report import report_md
from procedures.restart.roll import ZooKeeperLost, roll_all
from tests.rolling_restart_env import engine_roll, preferred_leaders, process_starts, start_roll_cluster

BROKERS = (2, 3)


class OutageWhenDown(threading.Thread):
    """Stops the server once ``broker`` has deregistered, for ``seconds``, then starts it again."""

    def __init__(self, server: EmbeddedZooKeeper, watcher: KazooClient, broker: int, seconds: float) -> None:
        super().__init__(daemon=True, name="outage")
        self.server, self.watcher, self.broker, self.seconds = server, watcher, broker, seconds
        self.landed = threading.Event()
        self.over = threading.Event()
        self.stop_waiting = threading.Event()

    def run(self) -> None:
        before = registration_czxid(self.watcher, self.broker)
        while not self.stop_waiting.is_set():
            if registration_czxid(self.watcher, self.broker) is None and before is not None:
                break
            time.sleep(0.01)
        else:
            return
        self.server.stop()
        self.landed.set()
        time.sleep(self.seconds)         # the outage itself: a fault's length, not a wait on a result
        self.server.start()
        self.over.set()


def _setup(tmp_path: Path, cleanup: ExitStack):
    server = EmbeddedZooKeeper(data_dir=str(tmp_path / "zk")).start()
    cleanup.callback(server.stop)
    root = KazooClient(hosts=server.connect_string, timeout=10)
    root.start(timeout=10)
    root.create("/roll")
    root.stop()
    root.close()
    connect = server.connect_string + "/roll"
    cluster = cleanup.enter_context(start_roll_cluster(connect))
    watcher = KazooClient(hosts=connect, timeout=30)
    watcher.start(timeout=10)
    cleanup.callback(watcher.close)
    cleanup.callback(watcher.stop)
    return server, cluster, connect, watcher


def _slow_start(cluster):
    """The restart, its new process registering 60 simulated seconds after the old one stopped (3 s at 20x):
    time for the outage to land while the broker is down."""
    def act(broker: int) -> str:
        cluster.restart_process(broker, start_s=60.0)
        return f"broker {broker} restarting"
    return act


def test_a_6_s_outage_while_a_broker_is_down_for_its_restart_is_ridden_out(tmp_path: Path) -> None:
    with ExitStack() as cleanup:
        server, cluster, connect, watcher = _setup(tmp_path, cleanup)
        starts = process_starts(cluster)
        outage = OutageWhenDown(server, watcher, BROKERS[0], 6.0)
        cleanup.callback(outage.stop_waiting.set)
        roll, book, client = engine_roll(connect, _slow_start(cluster), tmp_path / "progress.json",
                                         [(b,) for b in BROKERS], register_timeout_s=120)
        cleanup.callback(client.close)
        cleanup.callback(client.stop)
        outage.start()
        book = roll_all(roll, book)
        assert outage.landed.is_set() and outage.over.is_set()
        assert book.all_done, [(b.state, b.step, b.message) for b in book.batches]
        after = process_starts(cluster)
        assert {b: after.get(b, 0) - starts.get(b, 0) for b in range(1, 7)} == {
            b: (1 if b in BROKERS else 0) for b in range(1, 7)}                     # each exactly once
        assert book.batch(0).outages >= 1
        # a broker whose session ZooKeeper expired in the outage (a loaded machine: the emulator's record)
        # lost its leaderships by ZooKeeper's rule, not the roll's doing (as the fault campaign judges it)
        expired = {e.broker for e in cluster.history() if e.kind == "session_expired"}
        away = {tp: (pref, leader) for tp, (pref, leader) in preferred_leaders(watcher).items()
                if pref != leader and pref not in expired}
        assert away == {}, f"preferred leaders not leading (preferred, leader): {away}; sessions expired: {expired}"
        plan = RestartPlan(tuple((b,) for b in BROKERS), {}, {}, "broker", "restart {broker}", None)
        assert "ZooKeeper outage(s) waited out" in report_md(plan, book)


def test_an_outage_beyond_the_bound_stops_the_roll_at_its_gate_and_a_resume_finishes_without_a_second_restart(
        tmp_path: Path) -> None:
    with ExitStack() as cleanup:
        server, cluster, connect, watcher = _setup(tmp_path, cleanup)
        starts = process_starts(cluster)
        outage = OutageWhenDown(server, watcher, BROKERS[0], 8.0)
        cleanup.callback(outage.stop_waiting.set)
        progress = tmp_path / "progress.json"
        roll, book, client = engine_roll(connect, _slow_start(cluster), progress, [(b,) for b in BROKERS],
                                         outage_s=3.0, register_timeout_s=120)
        cleanup.callback(client.close)
        cleanup.callback(client.stop)
        outage.start()
        with pytest.raises(ZooKeeperLost, match=rf"broker {BROKERS[0]}: stopped at the registration: ZooKeeper did "
                                                r"not answer for \d+s"):
            roll_all(roll, book)
        outage.join(30)
        saved = engine_roll(connect, _slow_start(cluster), progress, [(b,) for b in BROKERS])[1]
        first = saved.batch(0)
        assert (first.state, first.step, first.stopped_at) == (BatchState.FAILED, "restarting", "registration")
        assert "resume the roll" in first.message and "clear" not in first.message
        assert saved.batch(1).state is BatchState.PENDING
        plan = RestartPlan(tuple((b,) for b in BROKERS), {}, {}, "broker", "restart {broker}", None)
        assert (f"- broker(s) {BROKERS[0]}, batch 1, at the registration (failed): broker {BROKERS[0]}: stopped at "
                "the registration: ZooKeeper did not answer") in report_md(plan, saved)
        roll, book, client2 = engine_roll(connect, _slow_start(cluster), progress, [(b,) for b in BROKERS])
        cleanup.callback(client2.close)
        cleanup.callback(client2.stop)
        book = roll_all(roll, book)
        assert book.all_done, [(b.state, b.step, b.message) for b in book.batches]
        after = process_starts(cluster)
        assert {b: after.get(b, 0) - starts.get(b, 0) for b in BROKERS} == {b: 1 for b in BROKERS}
