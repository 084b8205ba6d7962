"""Plan the undo of an earlier run: restore the assignment it recorded before its first write.

A data-moving run writes ``plan/rollback.json`` (the assignment of every partition it planned to
move, as it was) and ``plan/plan.json`` (its targets) before anything else. :func:`plan_rollback`
takes both and the live snapshot and restores, for each partition of the run:

* live == the run's target (replica order aside: demotion and election re-order) → back to the
  recorded assignment, in its recorded order (the preferred leader comes back too);
* the recorded replicas in another order (a decommission's demotion re-orders before any wave) →
  the recorded order again (no data copied);
* live == the recorded assignment → nothing to undo (the run never got to it);
* anything else → somebody changed it since (or it is mid-reassignment): left alone and listed
  in the plan's notes with what it is now, what the run set and what it was.

Without the run's targets (a plain Kafka-format JSON), every entry that differs from the live
assignment is restored. A partition that no longer exists is listed, not planned.

Failure: :class:`PlanRefused` when nothing is left to restore, or a partition is being reassigned
now (``refuse_reassigning``).
"""

from __future__ import annotations

from typing import Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move, Plan, PlanRefused, make_plan
from planning.kernels.decommission import refuse_reassigning
from planning.kernels.loads import size_of

SHOWN = 20


def plan_rollback(snapshot: ClusterSnapshot, original: Mapping[TopicPartition, tuple[int, ...]],
                  run_targets: Mapping[TopicPartition, tuple[int, ...]] | None,
                  sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0, source: str = "") -> Plan:
    """The moves that restore ``original`` where the run's change is still in place (module docstring)."""
    moves, changed, gone, untouched = [], [], [], 0
    for tp in sorted(original):
        if not snapshot.has_partition(tp):
            gone.append(str(tp))
            continue
        live = snapshot.partition(tp)
        want = tuple(original[tp])
        if tuple(live.replicas) == want:
            untouched += 1
            continue
        target = None if run_targets is None else run_targets.get(tp)
        reordered = set(live.replicas) == set(want)      # e.g. the decommission's demotion, before any wave
        if run_targets is not None and not reordered and (target is None or set(target) != set(live.replicas)):
            changed.append(f"{tp}: now {list(live.replicas)}, the run set {list(target or ())}, was {list(want)}")
            continue
        moves.append(live)
    refuse_reassigning([p for p in moves if p.is_reassigning])
    notes = []
    if untouched:
        notes.append(f"{untouched} partition(s) already have their recorded assignment (the run never changed them)")
    if changed:
        notes.append(f"{len(changed)} partition(s) changed by someone else since the run, left alone: "
                     + "; ".join(changed[:SHOWN]) + (" …" if len(changed) > SHOWN else ""))
    if gone:
        notes.append(f"{len(gone)} partition(s) no longer exist: {', '.join(gone[:SHOWN])}")
    if not moves:
        raise PlanRefused("nothing to roll back: " + ("; ".join(notes) or "the recorded assignment is empty"))
    planned = [Move(p.tp, tuple(p.replicas), tuple(original[p.tp]), size_of(sizes, p.tp), p.leader) for p in moves]
    return make_plan("rollback", planned, seed, sized=bool(sizes), notes=tuple(notes),
                     params={"source": source, "restored": str(len(planned)), "left_alone": str(len(changed))})
