"""Wave packing benchmark: predicted total vs the physical lower bound vs fixed batches of 10.

Decommission of 4 of 48 brokers (20,000 partitions, RF 3, 3 racks, Pareto-skewed sizes, mean
1 GiB), throttle 50 MB/s, for several per-broker move limits. Predicted time of a wave = its
busiest broker's max(in, out) bytes ÷ throttle; the plan's total is the sum over waves (each
wave is a barrier). Lower bound = max over brokers of total in or out bytes ÷ throttle. The
baseline is fixed batches of 10 partitions in (topic, partition) order with the same model.

Run: ``/tmp/venv/bin/python bench/bench_waves.py``. Prints figures only.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_jobs.kernels.decommission import plan_decommission  # noqa: E402
from spark_jobs.kernels.waves import WaveLimits, fixed_batches, pack_waves, wave_bounds  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402

THROTTLE = 50_000_000


def main() -> None:
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    for label, alpha in (("Pareto 1.5 (heavy tail)", 1.5), ("Pareto 3 (mild skew)", 3.0)):
        sizes = synthetic_sizes(snap, seed=2, alpha=alpha)
        plan = plan_decommission(snap, [3, 10, 17, 30], sizes, seed=0)
        print(f"== decommission 4/48 brokers, {len(plan.moves)} partitions moving, sizes {label}")
        for per_broker in (5, 10, 20, 50, 1000):
            limits = WaveLimits(per_broker, None, 512 * 1024, THROTTLE)
            t = time.perf_counter()
            waves = pack_waves(plan.moves, limits)
            took = time.perf_counter() - t
            ours = wave_bounds(plan.moves, waves, limits)
            fixed = wave_bounds(plan.moves, fixed_batches(plan.moves, 10, limits), limits)
            print(f"max {per_broker:4d} moves/broker: {len(waves):4d} waves, predicted {ours.predicted_seconds / 3600:6.2f} h, "
                  f"lower bound {ours.lower_bound_seconds / 3600:5.2f} h (ratio {ours.ratio:.3f}), "
                  f"fixed batches of 10: {fixed.waves} waves {fixed.predicted_seconds / 3600:6.2f} h "
                  f"({fixed.predicted_seconds / ours.predicted_seconds:.2f}x slower); packing {took:.2f} s")


if __name__ == "__main__":
    main()
