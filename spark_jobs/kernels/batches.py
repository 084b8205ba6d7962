"""User reassignment JSON, preferred-leader election batches and topic-deletion batches.

* :func:`plan_user_reassignment` validates a user's reassignment JSON with Kafka's execute-time
  rules (docs/zookeeper.md §5.1, :func:`kafka_zk.admin.reassignment.validate_targets`) and makes it a plan
  (entries equal to the current list are dropped), so it is waved and throttled like any other.
* :func:`plan_preferred_election` lists partitions whose leader is not the preferred replica and
  whose preferred replica is live and in the ISR, in batches under the znode limit
  (:func:`kafka_zk.admin.election.election_batches`); the others are noted with their reason.
* :func:`plan_topic_deletion` resolves names or a regex (full match) and refuses internal
  topics, unknown names and topics with a reassignment in flight; already-marked topics are noted.

Failure: :class:`kafka_zk.errors.InvalidInput` (or a subclass) naming every refused entry.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from kafka_zk.admin.election import election_batches, preferred_election_candidates
from kafka_zk.admin.reassignment import targets_from_file_entries, validate_targets
from kafka_zk.codecs import ReassignmentFileEntry, TopicPartition
from kafka_zk.model import INTERNAL_TOPICS, ClusterSnapshot
from spark_jobs.kernels.decommission import refuse_reassigning
from spark_jobs.kernels.loads import size_of
from spark_jobs.kernels.model import Move, Plan, PlanRefused, make_plan


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


def plan_preferred_election(snapshot: ClusterSnapshot, topics: Iterable[str] | None = None,
                            batch_size: int | None = None, max_znode_bytes: int = 512 * 1024) -> Plan:
    names = None if topics is None else list(dict.fromkeys(topics))
    if names:
        missing = [t for t in names if t not in snapshot.topics]
        if missing:
            raise PlanRefused(f"topic(s) {missing} do not exist; check --topics")
        tps = [p.tp for t in sorted(names) for p in snapshot.topics[t].partitions.values()]
    else:
        tps = None
    eligible, not_eligible = preferred_election_candidates(snapshot, tps)
    batches = election_batches(eligible, max_znode_bytes, batch_size)
    reasons: dict[str, int] = {}
    for ne in not_eligible:
        if "already the leader" not in ne.reason:
            key = re.sub(r"\d+", "N", ne.reason)
            reasons[key] = reasons.get(key, 0) + 1
    notes = tuple(f"{n} partition(s) skipped: {r}" for r, n in sorted(reasons.items()))
    return Plan("election", (), {}, 0, election=tuple(batches), notes=notes,
                params={"topics": ",".join(names or []) or "*"})


def plan_topic_deletion(snapshot: ClusterSnapshot, topics: Iterable[str] | None = None,
                        regex: str | None = None, batch_size: int = 50) -> Plan:
    if (not topics) == (regex is None):
        raise PlanRefused("give either --topics or --topic-regex (exactly one)")
    if batch_size < 1:
        raise PlanRefused(f"batch size {batch_size} must be ≥ 1")
    if regex is not None:
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise PlanRefused(f"--topic-regex {regex!r} is not a valid regular expression ({exc})") from None
        names = sorted(t for t in snapshot.topics if pattern.fullmatch(t) and t not in INTERNAL_TOPICS)
        if not names:
            raise PlanRefused(f"--topic-regex {regex!r} matches no deletable topic")
    else:
        names = sorted(dict.fromkeys(topics or ()))
        missing = [t for t in names if t not in snapshot.topics]
        if missing:
            raise PlanRefused(f"Topic(s) {', '.join(missing)} do not exist; remove them from the list")
        internal = [t for t in names if t in INTERNAL_TOPICS]
        if internal:
            raise PlanRefused(f"Topic(s) {', '.join(internal)} are kafka internal topics and are not "
                              "allowed to be marked for deletion")
    in_znode = {tp.topic for tp in (snapshot.reassignment.targets() if snapshot.reassignment else {})}
    moving = sorted(t for t in names if t in in_znode or any(
        p.is_reassigning for p in snapshot.topics[t].partitions.values()))
    if moving:
        raise PlanRefused(f"Topic(s) {', '.join(moving)} are being reassigned: wait for the reassignment "
                          "to finish, then plan the deletion again")
    marked = [t for t in names if t in snapshot.delete_markers]
    todo = [t for t in names if t not in snapshot.delete_markers]
    batches = tuple(tuple(todo[i:i + batch_size]) for i in range(0, len(todo), batch_size))
    notes = (f"already marked for deletion: {', '.join(marked)}",) if marked else ()
    return Plan("delete-topics", (), {}, 0, deletion=batches, notes=notes,
                params={"topics": ",".join(names)})
