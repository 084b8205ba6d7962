"""Estimate against run: a rehearsal of a cluster whose leaders moved, wave by wave and in total.

Issue 38's shape by default: 12 brokers in 3 racks, 5,000 partitions (50 topics of 100, RF 3,
lognormal sizes of mean ``--mean-gib``), brokers restarted one after the other with no election
since (``--restart``, default two), then the decommission of ``--remove`` at 100 MiB/s (its
leadership demoted first, as the runbook does). The 'real'
cluster is the emulator on a private ZooKeeper; the run is the executor itself driven on it on
the emulator's simulated clock (as tests/operators/test_rehearsal_leaders_as_found.py does), the
rehearsal is ``kafka-runbook rehearse``'s own code on a copy seeded from the cluster's snapshot.
Prints the leaders not preferred, each wave's rehearsed and run seconds, the plan's estimate (its
parts), the rehearsal's headline total and the run's first write to last wave done (its
waves.json, simulated epoch seconds; driven like a rehearsal, the run waits the same modelled gaps,
so the totals compare the copying and fixed costs, the per-wave lines the leaders' effect).
Figures go to BENCHMARKS.md; nothing is asserted.
``python -m bench.bench_estimate_vs_run``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

GiB, MiB = 1024 ** 3, 1024 ** 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=12)
    p.add_argument("--partitions", type=int, default=5000)
    p.add_argument("--mean-gib", type=float, default=1.0)
    p.add_argument("--restart", default="3,7", help="brokers restarted without an election, in order")
    p.add_argument("--remove", default="11")
    p.add_argument("--max-moves-per-broker", type=int, default=50)
    p.add_argument("--speed", type=float, default=3600.0)
    args = p.parse_args()

    from cli.rehearsal_run import RehearsalInput, rehearse
    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_sim.seed import broker_racks, partition_sizes, topic_layout
    from kafka_sim.timeline import wave_spans
    from kafka_zk.connect import close, connect
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    from planning.plan_folder.read import load_plan_artifacts
    from procedures.run_folder import RunFolder
    from kafka_zk.snapshot import read_snapshot
    from formats.snapshot_file import write_snapshot
    from procedures.rehearsal.executor import (COPY_CHROOT_PREFIX, DiskSampler, Rehearsal, RehearsalExecutor,
                                               SimEpochClock, demote_on_copy, drive)
    from procedures.waves.book import WaveBook
    from spark_jobs import plan_job

    start = datetime(2026, 12, 2, tzinfo=timezone.utc)
    d = Path(tempfile.mkdtemp(prefix="bench-estimate-"))
    server = EmbeddedZooKeeper().start()
    chroot = f"{COPY_CHROOT_PREFIX}real"
    try:
        racks = broker_racks(args.brokers, 3)
        layout = topic_layout(racks, args.partitions // 100, 100, 3, seed=5)
        sizes = partition_sizes(layout, "lognormal", args.mean_gib * GiB, seed=5)
        with EmulatedCluster(server.connect_string + chroot, ClusterSpec(brokers=racks, speed=args.speed)) as cluster:
            cluster.create_topics({t: (layout[t], sizes[t], None) for t in layout})
            for b in (int(x) for x in args.restart.split(",") if x):
                cluster.kill_broker(b)
                cluster.wait_idle(600)
                cluster.restart_broker(b)
                cluster.wait_idle(600)
            client = connect(server.connect_string + chroot, timeout=60)
            snap = read_snapshot(client)
            (d / "log-dirs.json").write_text(cluster.log_dirs_json())
            write_snapshot(snap, str(d / "snapshot.jsonl"))
            moved = sum(1 for q in snap.partitions() if q.leader != q.preferred_leader)
            plan_job.execute(plan_job.parse_args([
                "--snapshot", str(d / "snapshot.jsonl"), "--op", "decommission", "--brokers", args.remove,
                "--sizes", str(d / "log-dirs.json"), "--out", str(d / "plan"), "--engine", "driver",
                "--throttle", str(100 * MiB), "--max-moves-per-broker", str(args.max_moves_per_broker)]), None)
            summary = json.loads((d / "plan" / "summary.json").read_text())
            removed = tuple(int(b) for b in args.remove.split(","))
            t = time.monotonic()
            report = rehearse(RehearsalInput(snapshot=str(d / "snapshot.jsonl"), sizes=str(d / "log-dirs.json"),
                                             plan_dir=str(d / "plan"), out_dir=str(d / "rehearsal"), start_at=start,
                                             demote=removed),
                              zookeeper=server.connect_string)
            rehearsal_wall = time.monotonic() - t
            plan = load_plan_artifacts(str(d / "plan"))
            folder = RunFolder(d / "run").ensure()
            folder.plan_dir.mkdir(parents=True, exist_ok=True)
            for f in (d / "plan").iterdir():
                (folder.plan_dir / f.name).write_bytes(f.read_bytes())
            with cluster.clock_held():
                sim = Rehearsal(cluster, client, SimEpochClock(cluster, start.timestamp() - cluster.now()),
                                DiskSampler(cluster))
                op = RehearsalExecutor(rehearsal=sim, folder=folder, windows=None, runbook="decommission_brokers",
                                       cluster="bench", run_id="run", poll_interval_s=30.0,
                                       throttle_bytes_per_sec=plan.throttle_bytes_per_s)
                demote_on_copy(sim, folder, frozenset(removed), "run")   # the runbook's demote step
                outcome = drive(op)
            spans = wave_spans(cluster.history(), [[(tp.topic, tp.partition) for tp in w.target] for w in plan.waves])
            book = WaveBook.load(folder.wave_progress)
            run_total = max(float(w.done_at) for w in book.waves) - min(float(w.submitted_at) for w in book.waves)
            close(client)
        print(f"{snap.partition_count} partitions, {args.brokers} brokers, restarted {args.restart}: {moved} leaders "
              f"not preferred ({moved / snap.partition_count:.1%}); plan {summary['moves']} moves in "
              f"{summary['waves']} waves; run error: {outcome.error}")
        for w, s in zip(report.waves, spans):
            print(f"wave {w.id}: rehearsed {w.seconds:.1f} s, run {s.seconds:.1f} s "
                  f"({(w.seconds - s.seconds) / s.seconds:+.2%})")
        est = summary["estimate"]
        print(f"plan estimate {est['total_s']:.0f} s = {est['copy_s']:.0f} copy + {est['fixed_s']:.1f} fixed + "
              f"{est['gaps_s']:.1f} gaps; rehearsal headline {report.elapsed_s:.0f} s; run first write to last wave "
              f"done {run_total:.0f} s ({(report.elapsed_s - run_total) / run_total:+.2%}); rehearsal wall "
              f"{rehearsal_wall:.0f} s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
