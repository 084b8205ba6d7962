"""The plan summary (summary.json): movement, per-broker balance before/after, bounds, timing.

Pure: built from the snapshot (or slice + baseline), the plan, its waves and the limits.
Racks are reported because with rack-aware placement the replica-count spread ≤ 1 holds within
each rack; across racks of unequal size it cannot (a rack holds its share of every partition).
``balance_after`` is over the brokers that hold data after the plan (what the planners balance);
a registered broker left empty by it (e.g. a drained one no plan may use) is listed in
``empty_after`` instead of making the spread its whole replica count.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.dead_brokers import dead_broker_facts
from planning.model import BrokerLoad, Plan, Wave
from planning.wave_time import estimate
from planning.kernels.loads import Loads, cluster_loads, moved_loads, rack_map, relative_spread, spread
from planning.kernels.waves import COLUMNAR_MIN_MOVES, WaveLimits, fixed_batch_bounds, wave_bounds


def _balance(loads, brokers: Sequence[int], racks: Mapping[int, str]) -> dict[str, Any]:
    by_rack: dict[str, list[int]] = {}
    for b in brokers:
        by_rack.setdefault(racks.get(b, f"\0{b}"), []).append(b)
    real = {r: bs for r, bs in by_rack.items() if not r.startswith("\0")}
    return {
        "replica_spread": spread(loads.replicas.get(b, 0) for b in brokers),
        "leader_spread": spread(loads.leaders.get(b, 0) for b in brokers),
        "bytes_relative_spread": round(relative_spread(loads.bytes.get(b, 0) for b in brokers), 4),
        "replica_spread_within_rack": {r: spread(loads.replicas.get(b, 0) for b in bs)
                                       for r, bs in sorted(real.items())},
        "bytes_relative_spread_within_rack": {
            r: round(relative_spread(loads.bytes.get(b, 0) for b in bs), 4) for r, bs in sorted(real.items())},
    }


DRAINING = frozenset({"decommission", "replace"})   # operations whose lower bound is the replicas on removed brokers


def build_summary(snapshot: ClusterSnapshot, plan: Plan, waves: Sequence[Wave], limits: WaveLimits,
                  sizes: Mapping[TopicPartition, int] | None = None,
                  baseline: Mapping[int, BrokerLoad] | None = None,
                  partitions_total: int | None = None, before: Loads | None = None) -> dict[str, Any]:
    """The summary document (without ``plan_hash``, which the artifact writer adds). ``before``:
    :func:`planning.kernels.loads.cluster_loads` of the snapshot, sizes and baseline when the
    caller has it (the plan job does, for the disk profile): not counted again."""
    racks = rack_map(snapshot.brokers)
    live_after = sorted(b for b in snapshot.brokers if b not in plan.removed)
    ids = sorted(set(snapshot.brokers) | set(baseline or {}) | {b for m in plan.moves for b in m.current})
    if before is None:
        before = cluster_loads(snapshot.partitions(), ids, sizes, baseline)
    if len(plan.moves) >= COLUMNAR_MIN_MOVES:
        # local: numpy only for plans this large
        from planning.kernels.move_columns import moved_loads_columns

        after = moved_loads_columns(before, plan.moves)
    else:
        after = moved_loads(before, plan.moves)  # = cluster_loads(..., plan.target): moves carry the sizes
    bounds = wave_bounds(plan.moves, waves, limits)
    fixed = fixed_batch_bounds(plan.moves, 10, limits, bounds)
    holding = [b for b in live_after if after.replicas.get(b, 0) > 0]
    empty_after = [b for b in live_after if after.replicas.get(b, 0) == 0] if holding else []
    stranded = set(plan.stranded)    # left on a dead broker (no live in-sync replica): not a move
    on_removed = sum(1 for p in snapshot.partitions() if not (stranded and p.tp in stranded)
                     for b in p.replicas if b in plan.removed) if plan.operation in DRAINING else None
    return {
        "operation": plan.operation,
        "params": dict(plan.params),
        "seed": plan.seed,
        "partitions_total": partitions_total if partitions_total is not None else snapshot.partition_count,
        "moves": len(plan.moves),
        "replica_moves": plan.replica_moves,
        "replica_moves_lower_bound": on_removed,
        "bytes_moved": plan.bytes_moved,
        "sized": plan.sized,
        "removed_brokers": sorted(plan.removed),
        "brokers": {str(b): {"rack": snapshot.brokers[b].rack if b in snapshot.brokers else None,
                             "live": b in snapshot.brokers,
                             "before": {"replicas": before.replicas.get(b, 0), "bytes": before.bytes.get(b, 0),
                                        "leaders": before.leaders.get(b, 0)},
                             "after": {"replicas": after.replicas.get(b, 0), "bytes": after.bytes.get(b, 0),
                                       "leaders": after.leaders.get(b, 0)}} for b in ids},
        "balance_before": _balance(before, sorted(snapshot.brokers), racks),
        "balance_after": _balance(after, holding or live_after, racks),
        "empty_after": empty_after,
        "waves": len(waves),
        "limits": {"max_moves_per_broker": limits.max_moves_per_broker,
                   "max_wave_bytes": limits.max_wave_bytes, "max_znode_bytes": limits.max_znode_bytes,
                   "throttle_bytes_per_s": limits.throttle_bytes_per_s, "wave_overhead_s": limits.wave_overhead_s},
        "lower_bound_bytes": bounds.lower_bound_bytes,
        "busiest_bytes_sum": bounds.busiest_sum_bytes,
        "lower_bound_seconds": bounds.lower_bound_seconds,
        "predicted_seconds": bounds.predicted_seconds,
        "predicted_overhead_seconds": len(waves) * limits.wave_overhead_s,
        # the run's duration in its parts at the executor's default poll (planning/wave_time.py)
        "estimate": estimate([w.predicted_seconds for w in waves]).to_json(),
        "predicted_over_lower_bound": round(bounds.ratio, 4),
        "fixed_batches_of_10_seconds": fixed.predicted_seconds,
        "fixed_batches_of_10_busiest_bytes_sum": fixed.busiest_sum_bytes,
        "election_batches": len(plan.election),
        "deletion_batches": len(plan.deletion),
        "notes": list(plan.notes),
        **(dead_broker_facts(snapshot, plan.dead, plan.target, plan.stranded).summary() if plan.dead else {}),
    }
