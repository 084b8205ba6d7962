"""Rolling-restart benchmark: the roll's own overhead per broker, apart from the brokers' restart time.

A private embedded ZooKeeper on 127.0.0.1, the emulator with ``--brokers`` in 3 racks and
``--partitions`` partitions (RF 3, rack-aware, data and a producer-like load), then a whole roll
through the engine both the DAG's ``roll`` step and ``kafka-runbook restart`` run
(:func:`procedures.restart.roll.roll_batch`), one broker at a time. The restart is the emulator's
own (``restart_process``) with **zero** shutdown and start delays, so what remains of each broker's
wall time is the roll's: stop gate, demotion (re-order + election), the registration / ISR /
leadership polls, restoration and election, plus the emulator catching up the partitions (whose
simulated time is divided by ``--speed``). ``--action subprocess`` runs the action as the DAG
does, a new process (``kafka-runbook sim fault restart``), adding its start-up to each broker.

Prints per broker (median, max) the wall seconds in total and per step; nothing is asserted.
``python -m bench.bench_restart --partitions 300``; figures in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import threading
import time

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.control import CommandQueue
from kafka_zk.audit import AuditLog
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.connect import close, connect
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from kafka_zk.snapshot import read_snapshot
from kafka_zk.writer import ZkWriter
from procedures.batches.book import BatchBook
from procedures.restart.plan import plan_roll, render_action
from procedures.restart.roll import Roll, RestartBatch, RollSettings, roll_batch


STEP_NAMES = {"gated": "stop gate", "demoted": "demote", "restarting": "mark", "registered": "action+registered",
              "in_sync": "in sync", "done": "leaders back"}


def _assignment(brokers: int, partitions: int) -> dict[int, list[int]]:
    racks = [[b for b in range(1, brokers + 1) if b % 3 == r] for r in range(3)]
    out = {}
    for p in range(partitions):
        out[p] = [racks[(p + i) % 3][(p // 3 + i) % len(racks[(p + i) % 3])] for i in range(3)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=300)
    ap.add_argument("--speed", type=float, default=200.0)
    ap.add_argument("--poll", type=float, default=0.1)
    ap.add_argument("--action", choices=("inprocess", "subprocess"), default="inprocess")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with EmbeddedZooKeeper() as zks:
        conn = zks.connect_string + "/bench"
        spec = ClusterSpec(brokers={b: "abc"[b % 3] for b in range(1, args.brokers + 1)}, speed=args.speed,
                           produce_rate=256 * 1024)
        cluster = EmulatedCluster(conn, spec).start()
        stop = threading.Event()
        try:
            a = _assignment(args.brokers, args.partitions)
            cluster.create_topics({"bench": (a, {p: 50 * 1024 ** 2 for p in a}, {"min.insync.replicas": "2"})})
            queue = CommandQueue(cluster.tool_client)
            threading.Thread(target=lambda: [queue.run_pending(cluster, 0.2) for _ in iter(stop.is_set, True)],
                             daemon=True).start()
            client = connect(conn)
            writer = ZkWriter(client, AuditLog(None), authority=PersonAtKeyboard("bench"))
            template = (f"{sys.executable} -m cli.main sim fault --zookeeper {conn} restart {{broker}} 0 0"
                        if args.action == "subprocess" else "restart {broker}")
            plan = plan_roll(read_snapshot(client, with_configs=False), "all", [], "broker", template)
            spent: dict[int, float] = {}

            def act(broker: int) -> str:
                t = time.monotonic()
                if args.action == "subprocess":
                    subprocess.run(["/bin/bash", "-c", render_action(template, broker, None, None)], check=True,
                                   capture_output=True)
                else:
                    cluster.restart_process(broker, 0.0, 0.0)
                spent[broker] = time.monotonic() - t
                return ""
            book = BatchBook.fresh(RestartBatch, [[str(b) for b in batch] for batch in plan.batches])
            reached: dict[tuple[int, str], float] = {}

            def save(saved) -> None:     # when each broker reached each step (the engine saves after each)
                for x in saved.batches:
                    reached.setdefault((x.brokers[0], x.step if x.state.value != "done" else "done"), time.monotonic())
            roll = Roll(client, writer, act, RollSettings(poll_s=args.poll), save, logging.getLogger("bench"))
            per_broker = []
            t0 = time.monotonic()
            steps: dict[str, list[float]] = {}
            for b in book.batches:
                t = time.monotonic()
                reached[(b.brokers[0], "")] = t
                book = roll_batch(roll, book, b.index)
                per_broker.append((b.brokers[0], time.monotonic() - t))
                prev = t
                for name in ("gated", "demoted", "restarting", "registered", "in_sync", "done"):
                    at = reached.get((b.brokers[0], name), prev)
                    steps.setdefault(name, []).append(at - prev)
                    prev = at
            total = time.monotonic() - t0
            close(client)
        finally:
            stop.set()
            cluster.stop()
    walls = [w for _, w in per_broker]
    acts = list(spent.values())
    print(f"brokers={args.brokers} partitions={args.partitions} speed=x{args.speed:g} poll={args.poll}s "
          f"action={args.action}")
    print(f"roll wall {total:.1f} s; per broker median {statistics.median(walls):.2f} s, max {max(walls):.2f} s; "
          f"of which the action median {statistics.median(acts):.2f} s")
    print("per step, median (max) s: " + ", ".join(
        f"{STEP_NAMES[k]} {statistics.median(v):.2f} ({max(v):.2f})" for k, v in steps.items()))
    for broker, w in per_broker:
        print(f"  broker {broker}: {w:.2f} s (action {spent[broker]:.2f} s)")


if __name__ == "__main__":
    main()
