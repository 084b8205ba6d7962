"""Plan a preferred leader election: which partitions, in which batches, and what cannot be elected.

* :func:`election_scope` turns the inputs — nothing (every partition), ``topics`` and/or
  ``topic_regex`` (:func:`kafka_zk.topic_selection.choose_topics`; a named topic that does not
  exist is refused), or a ``kafka-preferred-replica-election.sh --path-to-json-file`` document
  (docs/zookeeper.md §7.1) — into the partitions to consider.
* :func:`plan_election` splits them into candidates (leader not the preferred replica; preferred
  replica live and in the ISR: :func:`kafka_zk.admin.election.preferred_election_candidates`)
  and the others with their reason, and cuts the candidates into batches each ≤
  ``max_batch_bytes`` encoded and ≤ ``max_batch_partitions``
  (:func:`kafka_zk.admin.election.election_batches`), with the leader balance per broker before
  and predicted after (:func:`kafka_zk.health.leader_balance`).
* :func:`election_plan` is that as a :class:`Plan` (operation ``election``).
* :func:`election_steps` is what the runbook's election step does on the live cluster: the
  candidates among some partitions, cut into batches (the same rule as the plan).
* Demotion (leadership off brokers to remove before data moves): :func:`demotion_targets` lists
  the partitions whose preferred replica is removed, re-ordered with the removed brokers last
  (:func:`demoted_order`); :func:`reorder_batches` cuts them into reassignment payloads each ≤
  ``max_bytes``, linear in the partitions: each entry's encoded size is counted once (the
  payload is ``{"version":1,"partitions":[e1,e2,…]}``: a fixed frame, the entries and one comma
  between two), not the whole batch re-encoded per added entry.

The plan job, the command line and the ``preferred_leader_election`` runbook all plan with these.

Failure: :class:`InvalidInput` for a bad scope (both a file and topics, a malformed file, a missing
topic, a bad regex) or a batch limit outside 64 .. :data:`kafka_zk.limits.MAX_ADMIN_BATCH_BYTES`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from kafka_zk.admin.election import NotEligible, election_batches, preferred_election_candidates
from kafka_zk.admin.reassignment import reassignment_request
from kafka_zk.codecs import (PreferredElectionRequest, ReassignmentEntry, ReassignmentRequest, TopicPartition,
                             decode_election_file, tp_key)
from kafka_zk.errors import InvalidInput, InvalidPayload
from kafka_zk.health import leader_balance
from kafka_zk.limits import ADMIN_BATCH_BYTES, MAX_ADMIN_BATCH_BYTES
from kafka_zk.model import ClusterSnapshot
from planning.model import Plan
from kafka_zk.topic_selection import choose_topics
from kafka_zk.validation import check_topics_exist


def election_file_scope(election_json: str) -> tuple[TopicPartition, ...]:
    """The partitions a ``--path-to-json-file`` document names, with Kafka's messages when it is bad."""
    try:
        return decode_election_file(election_json)
    except InvalidPayload as exc:
        raise InvalidInput(f"path_to_json_file: {exc} (expected {{\"partitions\":[{{\"topic\":\"foo\","
                           "\"partition\":1}]}})") from None


def election_scope(snapshot: ClusterSnapshot, topics: Any = (), topic_regex: str | None = None,
                   election_json: str | None = None) -> tuple[TopicPartition, ...] | None:
    """The partitions to consider (``None``: every partition of the cluster)."""
    if election_json and (topics or (topic_regex or "").strip()):
        raise InvalidInput("give either path_to_json_file or topics/topic_regex, not both")
    if election_json:
        return election_file_scope(election_json)
    choice = choose_topics(snapshot.topics, topics, topic_regex)
    check_topics_exist(choice.requested, snapshot.topics, "topics")
    if not choice.names:
        return None
    return tuple(p.tp for t in sorted(choice.names) for p in snapshot.topics[t].partitions.values())


@dataclass(frozen=True)
class ElectionPlan:
    """Batches to elect, what cannot be elected and why, balance before and predicted after."""

    batches: tuple[tuple[TopicPartition, ...], ...]
    not_eligible: Mapping[str, str]
    already_preferred: int
    scope: str
    max_batch_bytes: int
    before: tuple[dict, ...] = ()
    predicted: tuple[dict, ...] = ()
    batch_bytes: tuple[int, ...] = field(default_factory=tuple)

    @property
    def candidates(self) -> int:
        return sum(len(b) for b in self.batches)

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["batches"] = [[tp_key(tp) for tp in b] for b in self.batches]
        return doc


def plan_election(snapshot: ClusterSnapshot, scope: Sequence[TopicPartition] | None, max_batch_bytes: int,
                  max_batch_partitions: int | None) -> ElectionPlan:
    """Candidates in batches, the others with their reason, and the leader balance (module docstring)."""
    if not 64 <= int(max_batch_bytes) <= MAX_ADMIN_BATCH_BYTES:
        raise InvalidInput(f"max_batch_bytes={max_batch_bytes} must be between 64 and {MAX_ADMIN_BATCH_BYTES} "
                           "(ZooKeeper's 1 MiB znode limit, with headroom)")
    eligible, not_eligible = preferred_election_candidates(snapshot, scope)
    batches = tuple(election_batches(list(eligible), int(max_batch_bytes), max_batch_partitions or None))
    already = sum(1 for ne in not_eligible if "already the leader" in ne.reason)
    reasons = {tp_key(ne.tp): ne.reason for ne in not_eligible if "already the leader" not in ne.reason}
    return ElectionPlan(batches, reasons, already, "all partitions" if scope is None else f"{len(scope)} partition(s)",
                        int(max_batch_bytes), tuple(b.to_json() for b in leader_balance(snapshot)),
                        tuple(b.to_json() for b in leader_balance(snapshot, eligible)),
                        tuple(len(PreferredElectionRequest(b).encode()) for b in batches))


def election_plan(plan: ElectionPlan) -> Plan:
    """The batches as a plan (operation ``election``); the first 50 reasons as notes."""
    notes = tuple(f"{tp}: {why}" for tp, why in sorted(plan.not_eligible.items()))
    return Plan("election", (), {}, 0, election=plan.batches, notes=notes[:50])


def election_steps(snapshot: ClusterSnapshot, partitions: Sequence[TopicPartition] | None,
                   max_batch_bytes: int = ADMIN_BATCH_BYTES
                   ) -> tuple[list[TopicPartition], list[NotEligible], list[tuple[TopicPartition, ...]]]:
    """(candidates, the others with their reason, batches) for electing ``partitions`` (None: all)."""
    eligible, not_eligible = preferred_election_candidates(snapshot, partitions)
    return list(eligible), list(not_eligible), election_batches(list(eligible), max_batch_bytes)


def demoted_order(replicas: Sequence[int], removed: frozenset[int]) -> tuple[int, ...]:
    """``replicas`` with the removed brokers moved to the end (relative order kept)."""
    return tuple([b for b in replicas if b not in removed] + [b for b in replicas if b in removed])


def demotion_targets(snap: ClusterSnapshot, removed: frozenset[int]) -> dict[TopicPartition, tuple[int, ...]]:
    """Partitions preferred-led by a removed broker that have another replica to lead."""
    out = {}
    for p in snap.partitions():
        if p.replicas and p.replicas[0] in removed and not p.is_reassigning:
            order = demoted_order(p.replicas, removed)
            if order[0] not in removed:
                out[p.tp] = order
    return out


_FRAME = len(ReassignmentRequest(()).encode())


def _entry_bytes(tp: TopicPartition, replicas: Sequence[int]) -> int:
    """Bytes one entry adds to a reassignment payload (without the comma before it)."""
    return len(ReassignmentRequest((ReassignmentEntry(tp.topic, tp.partition, tuple(replicas)),)).encode()) - _FRAME


def reorder_batches(targets: Mapping[TopicPartition, Sequence[int]],
                    max_bytes: int = ADMIN_BATCH_BYTES) -> list[dict[TopicPartition, tuple[int, ...]]]:
    """Consecutive batches (by topic, partition) whose reassignment payload stays ≤ ``max_bytes``
    (an entry too large alone still gets a batch of its own: the write gate then refuses it)."""
    batches: list[dict[TopicPartition, tuple[int, ...]]] = []
    current: dict[TopicPartition, tuple[int, ...]] = {}
    size = _FRAME
    for tp in sorted(targets):
        extra = _entry_bytes(tp, targets[tp]) + (1 if current else 0)
        if current and size + extra > max_bytes:
            batches.append(current)
            current, size, extra = {}, _FRAME, extra - 1
        current[tp] = tuple(targets[tp])
        size += extra
    if current:
        batches.append(current)
    return batches


def payload_bytes(batch: Mapping[TopicPartition, Sequence[int]]) -> int:
    """The encoded size of one re-order batch (what ZooKeeper stores)."""
    return len(reassignment_request(batch).encode())
