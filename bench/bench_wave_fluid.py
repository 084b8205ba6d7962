"""Planner vs emulator per wave, without ZooKeeper: a plan's waves replayed in the emulator's own
rate model (max-min fair sharing, :func:`kafka_sim.replication.allocate`).

It builds the cluster ``bench/bench_rehearsal.py`` builds (same seeds, same plan job), then for each
wave lets every new replica fetch from its partition's leader, capped by the 100 MiB/s throttle on
both sides and the brokers' network, until every copy is done, and prints the planner's figure, the
busiest-broker bound and the replayed time. ``--leaders-stay`` keeps the removed brokers' leadership
(a rehearsal without the decommission's demote step); by default the leader of a partition led by a
removed broker is its first other replica, as after the demote step. The per-move fixed cost (~1 s
per wave) is not modelled here: the planner's 10 s per-wave overhead covers it.
Nothing is asserted; figures go to BENCHMARKS.md ("Rehearsals").
``python -m bench.bench_wave_fluid --partitions 20000 --brokers 48 [--leaders-stay]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any, Callable

from bench.bench_rehearsal import _prepare
from kafka_sim.replication import Flow, allocate
from planning.plan_folder.read import WaveArtifact, load_plan_artifacts
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes

THROTTLE = 100 * 1024 ** 2          # bench_rehearsal's plan throttle (the emulator's network rate too)


def replay_wave(wave: WaveArtifact, leader_of: dict, sizes: dict, removed: set[int],
                leaders_stay: bool) -> tuple[int, float, float]:
    """(flows, busiest-broker bound s, replayed s) of one wave."""
    flows, left, load = [], [], {}
    for tp, target in wave.target.items():
        current = wave.current[tp]
        leader = leader_of[tp]
        if leader in removed and not leaders_stay:
            leader = next(b for b in current if b not in removed)
        for r in target:
            if r not in current:
                flows.append(Flow(tp, leader, r, (("out", leader), ("in", r), ("lthr", leader), ("fthr", r))))
                left.append(float(sizes[tp]))
                for key in (("out", leader), ("in", r)):
                    load[key] = load.get(key, 0) + sizes[tp]
    now, active = 0.0, list(range(len(flows)))
    while active:
        live = [flows[i] for i in active]
        rates = allocate(live, {k: THROTTLE for f in live for k in f.keys})
        step = min(left[i] / rate for i, rate in zip(active, rates))
        now += step
        for i, rate in zip(active, rates):
            left[i] -= rate * step
        active = [i for i in active if left[i] > 1.0]
    return len(flows), max(load.values(), default=0) / THROTTLE, now


def bench_args(doc: str, argv: list[str] | None, extra: Callable[[argparse.ArgumentParser], None] | None = None,
               ) -> argparse.Namespace:
    """The cluster arguments bench_rehearsal's cluster takes (``--partitions``, ``--brokers``, ...)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--partitions", type=int, default=3000)
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--max-moves-per-broker", type=int, default=250)
    if extra is not None:
        extra(p)
    return p.parse_args(argv)


def planned_cluster(args: argparse.Namespace) -> tuple[dict, Any, Any, dict, set[int]]:
    """bench_rehearsal's cluster and its decommission plan: (plan info, plan, snapshot, sizes, removed brokers)."""
    with tempfile.TemporaryDirectory(prefix="bench-wave-fluid-") as tmp:
        info = _prepare(Path(tmp), args.brokers, args.partitions, 1.0, args.max_moves_per_broker)
        plan = load_plan_artifacts(str(Path(tmp) / "plan"))
    snap = synthetic_cluster(args.brokers, 3, max(1, args.partitions // 100), min(100, args.partitions), 3, seed=3)
    sizes = synthetic_sizes(snap, seed=4, mean=1024 ** 3)
    return info, plan, snap, sizes, set(sorted(snap.brokers)[-2:])


def main(argv: list[str] | None = None) -> int:
    args = bench_args(__doc__, argv, lambda p: p.add_argument(
        "--leaders-stay", action="store_true", help="the removed brokers keep leading (no demote step)"))
    info, plan, snap, sizes, removed = planned_cluster(args)
    leader_of = {part.tp: part.leader for part in snap.partitions()}
    total = 0.0
    for wave in plan.waves:
        flows, bound, replayed = replay_wave(wave, leader_of, sizes, removed, args.leaders_stay)
        total += replayed
        print(f"wave {wave.index}: {flows} copies, planner {wave.predicted_seconds:.0f} s, busiest-broker bound "
              f"{bound:.0f} s, replayed {replayed:.0f} s")
    print(f"{info['moves']:,} moves in {info['waves']} waves: replayed {total / 3600:.2f} h, planner "
          f"{info['predicted_h']:.2f} h ({'leaders stay on the removed brokers' if args.leaders_stay else 'demoted'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
