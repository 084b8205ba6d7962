"""A user's reassignment JSON as a plan.

:func:`plan_user_reassignment` validates a user's reassignment JSON with Kafka's execute-time
  rules (docs/zookeeper.md §5.1, :func:`kafka_zk.admin.reassignment.validate_targets`) and makes it a plan
  (entries equal to the current list are dropped), so it is waved and throttled like any other.

Election and deletion batches are planned in :mod:`planning.election` and
:mod:`planning.topic_deletion`.

Failure: :class:`kafka_zk.errors.InvalidInput` (or a subclass) naming every refused entry.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from kafka_zk.admin.reassignment import targets_from_file_entries, validate_targets
from kafka_zk.codecs import ReassignmentFileEntry, TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move, Plan, make_plan
from planning.kernels.decommission import refuse_reassigning
from planning.kernels.loads import size_of


def plan_user_reassignment(snapshot: ClusterSnapshot, entries: Sequence[ReassignmentFileEntry],
                           sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0) -> Plan:
    targets = targets_from_file_entries(entries)
    validate_targets(snapshot, targets)
    refuse_reassigning([snapshot.partition(tp) for tp in targets])
    moves = [Move(tp, snapshot.partition(tp).replicas, tuple(r), size_of(sizes, tp),
                  snapshot.partition(tp).leader) for tp, r in targets.items()]
    unchanged = sum(1 for m in moves if m.target == m.current)
    notes = (f"{unchanged} entr(y/ies) already match the current assignment and were dropped",) if unchanged else ()
    return make_plan("reassign-json", moves, seed, sized=bool(sizes), notes=notes,
                     params={"entries": str(len(targets))})
