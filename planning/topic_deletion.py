"""Plan a topic deletion: which topics, which are refused and why, and the batches.

:func:`select_topics` resolves the topic list and/or the regex against the snapshot
(:func:`kafka_zk.topic_selection.choose_topics`: the regex matches whole names), refuses — with
one reason per topic, all at once — topics that do not exist, internal topics
(``__consumer_offsets``, ``__transaction_state``) unless ``allow_internal``, and topics with a
reassignment in progress (docs/zookeeper.md §2.7.5), and cuts the rest into batches of at most
``batch_size`` topics and, when partition sizes are known, at most ``max_batch_bytes`` bytes of log
data (size × replicas). Topics already marked for deletion stay in their batch (a run waits on the
marker, it does not write it again) and are listed. :func:`deletion_plan` is the selection as a
:class:`Plan` (operation ``delete-topics``): the plan job, the command line and the
``delete_topics`` runbook all plan with these two functions.

Failure: :class:`InvalidInput` for unusable inputs (no topic and no regex, a bad regex or limit,
a byte cap without sizes); :func:`refusal_error` is the one error that lists every refused topic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import INTERNAL_TOPICS, ClusterSnapshot
from planning.model import Plan
from kafka_zk.topic_selection import choose_topics


@dataclass(frozen=True)
class DeletionSelection:
    """What the run will delete, what it refused and why, and the batches."""

    requested: tuple[str, ...]
    regex: str
    matched: tuple[str, ...]
    refused: Mapping[str, str]
    batches: tuple[tuple[str, ...], ...]
    partitions: Mapping[str, int] = field(default_factory=dict)
    data_bytes: Mapping[str, int] = field(default_factory=dict)
    already_marked: tuple[str, ...] = ()

    @property
    def selected(self) -> tuple[str, ...]:
        return tuple(t for b in self.batches for t in b)

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["batches"] = [list(b) for b in self.batches]
        doc["selected"] = list(self.selected)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "DeletionSelection":
        return cls(tuple(doc["requested"]), doc["regex"], tuple(doc["matched"]), dict(doc["refused"]),
                   tuple(tuple(b) for b in doc["batches"]), dict(doc.get("partitions", {})),
                   dict(doc.get("data_bytes", {})), tuple(doc.get("already_marked", ())))


def _int(value: Any, name: str, minimum: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name}={value!r} must be an integer ≥ {minimum}") from None
    if out < minimum:
        raise InvalidInput(f"{name}={value!r} must be an integer ≥ {minimum}")
    return out


def _refusals(snapshot: ClusterSnapshot, wanted: Sequence[str], allow_internal: bool) -> dict[str, str]:
    moving = {tp.topic for tp in snapshot.reassigning_partitions()}
    if snapshot.reassignment is not None:
        moving |= {e.topic for e in snapshot.reassignment.entries}
    refused: dict[str, str] = {}
    for t in wanted:
        if t not in snapshot.topics:
            refused[t] = "does not exist (not in /brokers/topics): remove it from the list"
        elif t in INTERNAL_TOPICS and not allow_internal:
            refused[t] = ("is a Kafka internal topic: deleting it loses consumer offsets or transaction state; "
                          "set allow_internal=true only if that is intended")
        elif t in moving:
            refused[t] = "has a partition reassignment in progress: wait for it to finish, then retry"
    return refused


def _batches(topics: Sequence[str], data: Mapping[str, int], batch_size: int,
             max_batch_bytes: int) -> tuple[tuple[str, ...], ...]:
    batches: list[tuple[str, ...]] = []
    current: list[str] = []
    current_bytes = 0
    for t in topics:
        over = max_batch_bytes and current and current_bytes + data.get(t, 0) > max_batch_bytes
        if len(current) >= batch_size or over:
            batches.append(tuple(current))
            current, current_bytes = [], 0
        current.append(t)
        current_bytes += data.get(t, 0)
    if current:
        batches.append(tuple(current))
    return tuple(batches)


def select_topics(snapshot: ClusterSnapshot, topics: Sequence[str] = (), topic_regex: str | None = None,
                  allow_internal: bool = False, batch_size: int = 10, max_batch_bytes: int = 0,
                  sizes: Mapping[TopicPartition, int] | None = None) -> DeletionSelection:
    """Resolve and check the topics to delete, then batch them (see module docstring)."""
    batch_size = _int(batch_size, "batch_size", 1)
    max_batch_bytes = _int(max_batch_bytes or 0, "max_batch_bytes", 0)
    choice = choose_topics(snapshot.topics, topics, topic_regex)
    if not choice.requested and not choice.regex:
        raise InvalidInput("nothing to delete: give topics (a list of names) or topic_regex (matched against the "
                           "whole topic name)")
    if max_batch_bytes and sizes is None:
        raise InvalidInput(f"max_batch_bytes={max_batch_bytes} needs partition sizes: give sizes_file (the output of "
                           "kafka-log-dirs.sh --describe), or set max_batch_bytes to 0")
    wanted = list(choice.names)
    refused = _refusals(snapshot, wanted, allow_internal)
    ok = [t for t in wanted if t not in refused]
    data = {t: sum(sizes.get(TopicPartition(t, p), 0) * len(part.replicas)
                   for p, part in snapshot.topics[t].partitions.items()) for t in ok} if sizes is not None else {}
    return DeletionSelection(choice.requested, choice.regex, choice.matched, refused,
                             _batches(ok, data, batch_size, max_batch_bytes),
                             {t: len(snapshot.topics[t].partitions) for t in ok}, data,
                             tuple(t for t in ok if t in snapshot.delete_markers))


def refusal_error(selection: DeletionSelection) -> InvalidInput:
    """One error naming every refused topic with its reason."""
    lines = [f"{t} {why}" for t, why in selection.refused.items()]
    return InvalidInput(f"refusing to delete {len(lines)} topic(s), nothing was written: " + "; ".join(lines))


def deletion_plan(selection: DeletionSelection) -> Plan:
    """The selection's batches as a plan (operation ``delete-topics``); refused selections raise."""
    if selection.refused:
        raise refusal_error(selection)
    notes = (f"already marked for deletion: {', '.join(selection.already_marked)}",) if selection.already_marked else ()
    return Plan("delete-topics", (), {}, 0, deletion=selection.batches, notes=notes,
                params={"topics": ",".join(selection.selected)})
