"""The roll's timeline is ZooKeeper's record of the restart, not when the action returned (issue 39).

On the emulator (6 brokers, data, a producer-like load, a simulated clock at 20x), the roll restarts
two brokers with an action that returns only 1.5 s after the new process registered, as
``ssh host sudo systemctl restart kafka`` returns long after the broker stopped on a real cluster.
An independent observer polls ZooKeeper every 10 ms and
keeps, per broker, when its old registration was last seen and first seen gone, the new
registration's ctime, and the partition-state writes (version, mtime, ISR, leader). The truth: the
deregistration between those two polls, the registration's ctime, the mtime of the first state write
after the restart that holds the broker in the ISR (of each partition it hosts; the last of them),
and of the first one that makes it the leader of its preferred partitions (the last of them). Each
of the report's times is within 1 s of its truth; the rendered report shows the same seconds.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from pathlib import Path

from kafka_zk import paths
from kafka_zk.codecs import decode_partition_state
from kafka_zk.snapshot import read_snapshot
from procedures.restart.plan import RestartPlan
from procedures.restart.report import report_md, timeline_rows
from procedures.restart.roll import roll_all
from tests.dags.conftest import new_chroot, plain_client
from tests.rolling_restart_env import engine_roll, start_roll_cluster

BROKERS = (4, 2)
TOLERANCE_S = 1.0


class Observer(threading.Thread):
    """Polls registrations and partition states (see module docstring)."""

    def __init__(self, zk, brokers, partitions) -> None:
        super().__init__(daemon=True, name="zk-observer")
        self.zk, self.brokers, self.partitions = zk, brokers, partitions
        self.first_czxid = {b: zk.exists(paths.broker(b)).czxid for b in brokers}
        self.last_present: dict[int, float] = {}
        self.first_absent: dict[int, float] = {}
        self.states: dict = {tp: [] for tp in partitions}     # tp -> [(version, mtime, isr, leader)]
        self.done = threading.Event()
        self.rounds = 0

    def settle(self) -> None:
        """Until two more rounds of polls have ended (the writes made so far are seen), then stop."""
        until = self.rounds + 2
        deadline = time.monotonic() + 30
        while self.rounds < until and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.01)
        self.done.set()
        self.join(10)

    def run(self) -> None:
        while not self.done.is_set():
            for b in self.brokers:
                stat = self.zk.exists(paths.broker(b))
                now = time.time()
                if stat is not None and stat.czxid == self.first_czxid[b]:
                    self.last_present[b] = now
                elif stat is None and b not in self.first_absent and b in self.last_present:
                    self.first_absent[b] = now
            for tp, seen in self.states.items():
                data, stat = self.zk.get(paths.partition_state(tp.topic, tp.partition))
                if not seen or seen[-1][0] != stat.version:
                    s = decode_partition_state(data)
                    seen.append((stat.version, stat.mtime / 1000.0, set(s.isr), s.leader))
            self.rounds += 1
            time.sleep(0.01)

    def truth(self, broker: int, replicas: dict, registered: float) -> tuple[float, float]:
        """(in sync, leaders back): the last of the hosted partitions' first writes after ``registered``."""
        joins, leads = [], []
        for tp, reps in replicas.items():
            if broker not in reps:
                continue
            after = [s for s in self.states[tp] if s[1] >= registered - 0.001]
            joins.append(next(m for _, m, isr, _ in after if broker in isr))
            if reps[0] == broker:
                leads.append(next((m for _, m, _, leader in after if leader == broker), None))
                assert leads[-1] is not None, (tp, reps, registered, self.states[tp])
        return max(joins), max(leads)


def test_the_reports_times_are_within_a_second_of_the_zookeeper_events(zk_server, tmp_path: Path) -> None:
    chroot = new_chroot(zk_server)
    connect = zk_server.connect_string + chroot
    with ExitStack() as cleanup:
        cluster = cleanup.enter_context(start_roll_cluster(connect))
        zk = plain_client(zk_server, chroot)
        cleanup.callback(zk.close)
        cleanup.callback(zk.stop)
        replicas = {p.tp: p.replicas for p in read_snapshot(zk, with_configs=False).partitions()}
        observer = Observer(zk, BROKERS, replicas)
        observer.start()
        cleanup.callback(observer.done.set)

        def act(broker: int) -> str:
            """As ``ssh host sudo systemctl restart kafka``: returns once the new process runs, and later."""
            before = zk.exists(paths.broker(broker)).czxid
            cluster.restart_process(broker)
            while (stat := zk.exists(paths.broker(broker))) is None or stat.czxid == before:
                time.sleep(0.05)
            time.sleep(1.5)
            return ""
        roll, book, client = engine_roll(connect, act, tmp_path / "progress.json", [(b,) for b in BROKERS])
        cleanup.callback(client.close)
        cleanup.callback(client.stop)
        book = roll_all(roll, book)
        observer.settle()
        assert book.all_done
        for b in book.batches:
            broker = b.brokers[0]
            stat = zk.exists(paths.broker(broker))
            assert stat.czxid != observer.first_czxid[broker]
            registered = stat.ctime / 1000.0
            in_sync, leaders = observer.truth(broker, replicas, registered)
            gone_after, gone_by = observer.last_present[broker], observer.first_absent[broker]
            assert gone_after - TOLERANCE_S <= b.down_at <= gone_by + TOLERANCE_S, (b.down_at, gone_after, gone_by)
            assert abs(b.registered_at - registered) <= TOLERANCE_S, (b.registered_at, registered)
            assert abs(b.in_sync_at - in_sync) <= TOLERANCE_S, (b.in_sync_at, in_sync)
            assert abs(b.leaders_back_at - leaders) <= TOLERANCE_S, (b.leaders_back_at, leaders)
        plan = RestartPlan(tuple((b,) for b in BROKERS), {}, {}, "broker", "restart {broker}", None)
        report = report_md(plan, book)
        for i, row in enumerate(timeline_rows(book), 1):
            assert (f"| {i} | {row.brokers[0]} | done | " in report
                    and f"| {row.down_s:.1f} s | {row.registered_s:.1f} s | {row.in_sync_s:.1f} s | "
                        f"{row.leaders_back_s:.1f} s |" in report)
