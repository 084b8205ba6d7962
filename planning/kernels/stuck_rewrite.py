"""The stuck-reassignment rewrite as a plan: each unregistered target broker replaced by a live one.

:func:`plan_replacements` is the plan job's ``replace-dead-targets`` operation, which the
stuck_reassignment runbook's diagnose step launches like every runbook launches its plan
(``operators/runbooks/stuck.py``): for each partition :func:`kafka_zk.admin.stuck.diagnose` finds
stuck on a target broker that is not registered, the target the one placer chooses
(:func:`planning.kernels.placement.replacement_targets`, each partition placed on the cluster as
it is, one at a time). ``target`` holds those targets; ``moves`` go from the partition's replicas
now to that target.

A partition for which no registered broker is left to take the dead one's place does not refuse
the whole plan: the runbook may still revert it to its original replicas
(:func:`kafka_zk.admin.stuck_fixes.choose_fixes`). Its refusal text (``"<topic>-<partition>: ..."``)
is one of the plan's ``notes`` instead, which the runbook raises only when reverting is not
possible either.

Pure: no I/O. Failure: none (refusals are notes, see above).
"""

from __future__ import annotations

from kafka_zk.admin.stuck import diagnose
from kafka_zk.admin.stuck_fixes import dead_target_partitions
from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
from planning.model import Move, Plan
from planning.kernels.placement import replacement_targets

OPERATION = "replace-dead-targets"


def plan_replacements(snapshot: ClusterSnapshot, seed: int = 0) -> Plan:
    """The rewrite target of every stuck partition with an unregistered target broker (see module)."""
    moves, target, refused = [], {}, []
    for s in dead_target_partitions(snapshot, diagnose(snapshot)):
        try:
            new = tuple(replacement_targets(snapshot, [s])[s.tp])
        except InvalidInput as exc:
            refused.append(str(exc))
            continue
        target[s.tp] = new
        moves.append(Move(s.tp, snapshot.partition(s.tp).replicas, new))
    return Plan(OPERATION, tuple(sorted(moves, key=lambda m: m.tp)), target, seed=seed, notes=tuple(refused))
