"""A decommission plan made without Spark (the planner's kernels and artifact writer) for the DAG
tests that only need *a* valid plan to hand over with ``plan_from``: much cheaper than a Spark run."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kafka_zk.connect import close, connect


def write_kernel_plan(connect_string: str, out: Path, removed: list[int], sizes: Mapping, throttle: int,
                      max_moves_per_broker: int = 2) -> int:
    """Plan removing ``removed`` from the cluster at ``connect_string``; returns the number of waves."""
    from kafka_zk.snapshot import read_snapshot
    from planning.plan_folder.write import write_plan_artifacts
    from planning.kernels.decommission import plan_decommission
    from planning.kernels.waves import WaveLimits, pack_waves
    from spark_jobs.summary import build_summary

    client = connect(connect_string)
    try:
        snap = read_snapshot(client, with_configs=False)
    finally:
        close(client)
    plan = plan_decommission(snap, removed, dict(sizes), seed=0)
    limits = WaveLimits(max_moves_per_broker=max_moves_per_broker, throttle_bytes_per_s=throttle)
    waves = pack_waves(plan.moves, limits)
    write_plan_artifacts(str(out), plan, waves, build_summary(snap, plan, waves, limits, dict(sizes)), throttle)
    return len(waves)
