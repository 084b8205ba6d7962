"""Wave packing benchmark: predicted total vs the physical lower bound vs fixed batches of 10.

Main table: decommission of 4 of 48 brokers (20,000 partitions, RF 3, 3 racks, Pareto-skewed
sizes, mean 1 GiB), throttle 50 MB/s, for several per-broker move limits. Predicted time of a
wave = its busiest broker's max(in, out) bytes ÷ throttle; the plan's copying time is the sum
over waves (each wave is a barrier); the per-wave overhead (10 s by default) is printed beside
it. Lower bound = max over brokers of total in or out bytes ÷ throttle. The baseline is fixed
batches of 10 partitions in (topic, partition) order with the same model.

``--sweep`` adds 75 more cases (12–96 brokers, Pareto α 1.2/1.5/3, 2–20 moves per broker) and
prints each ratio and the worst. ``--scale N`` packs the moves of an N-partition, 100-broker
decommission of 10 brokers (the plan-step benchmark's cluster) at 5 and 20 moves per broker.

Run: ``.venv/bin/python bench/bench_waves.py [--sweep] [--scale 1000000]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from planning.kernels.decommission import plan_decommission  # noqa: E402
from kafka_zk.limits import ADMIN_BATCH_BYTES  # noqa: E402
from planning.kernels.waves import WaveLimits, fixed_batch_bounds, pack_waves, wave_bounds  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402

THROTTLE = 50_000_000


def _pack(moves, per_broker: int) -> tuple[str, float]:
    limits = WaveLimits(per_broker, None, ADMIN_BATCH_BYTES, THROTTLE)
    t = time.perf_counter()
    waves = pack_waves(moves, limits)
    took = time.perf_counter() - t
    ours = wave_bounds(moves, waves, limits)
    fixed = fixed_batch_bounds(moves, 10, limits, ours)
    overhead = len(waves) * limits.wave_overhead_s
    line = (f"max {per_broker:4d} moves/broker: {len(waves):5d} waves, copying {ours.predicted_seconds / 3600:6.2f} h "
            f"(+ {overhead / 3600:4.2f} h overhead), lower bound {ours.lower_bound_seconds / 3600:6.2f} h "
            f"(ratio {ours.ratio:.3f}), fixed batches of 10: {fixed.waves} waves {fixed.predicted_seconds / 3600:6.2f} h "
            f"({fixed.predicted_seconds / ours.predicted_seconds:.2f}x slower); packing {took:.2f} s")
    return line, ours.ratio


def main_table() -> None:
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    for label, alpha in (("Pareto 1.5 (heavy tail)", 1.5), ("Pareto 3 (mild skew)", 3.0)):
        sizes = synthetic_sizes(snap, seed=2, alpha=alpha)
        plan = plan_decommission(snap, [3, 10, 17, 30], sizes, seed=0)
        print(f"== decommission 4/48 brokers, {len(plan.moves)} partitions moving, sizes {label}")
        for per_broker in (5, 10, 20, 50, 1000):
            print(_pack(plan.moves, per_broker)[0], flush=True)


def sweep() -> None:
    worst, over = 0.0, 0
    shapes = [(48, 200, 100), (24, 50, 60), (96, 100, 100), (12, 20, 30), (60, 100, 50)]
    for n, (brokers, topics, partitions) in enumerate(shapes):
        snap = synthetic_cluster(brokers, 3, topics, partitions, 3, seed=n + 1)
        removed = [3, 10, 17, 30, 55, 71][:max(2, min(6, brokers // 12))]
        for alpha in (1.2, 1.5, 3.0):
            sizes = synthetic_sizes(snap, seed=n + 7, alpha=alpha)
            moves = plan_decommission(snap, removed, sizes, seed=0).moves
            for per_broker in (2, 3, 5, 10, 20):
                line, ratio = _pack(moves, per_broker)
                worst, over = max(worst, ratio), over + (ratio > 1.2)
                print(f"{brokers:3d} brokers, {len(removed)} removed, Pareto {alpha}: {line}", flush=True)
    print(f"sweep: worst ratio {worst:.3f}, {over} of {len(shapes) * 15} cases above 1.2")


def scale(n_partitions: int) -> None:
    t = time.perf_counter()
    snap = synthetic_cluster(100, 3, n_partitions // 1000, 1000, 3, seed=3)
    sizes = synthetic_sizes(snap, seed=4)
    moves = plan_decommission(snap, list(range(0, 100, 10)), sizes, seed=0).moves
    print(f"== {n_partitions:,} partitions, 100 brokers, 10 removed: {len(moves):,} moves "
          f"(cluster and plan built in {time.perf_counter() - t:.1f} s)")
    for per_broker in (20, 5):
        print(_pack(moves, per_broker)[0], flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--scale", type=int, default=None, metavar="PARTITIONS")
    args = ap.parse_args()
    main_table()
    if args.sweep:
        sweep()
    if args.scale:
        scale(args.scale)


if __name__ == "__main__":
    main()
