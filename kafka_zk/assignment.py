"""Kafka's default replica assignment, exactly as ``AdminUtils`` computes it (docs/zookeeper.md §4), pure.

* :func:`assign_replicas` — rack-unaware (§4.2) and rack-aware (§4.3) placement with Kafka's
  rack modes (enforced / disabled / safe). A fixed start index seeds both the start index and
  the replica shift; otherwise two numbers are drawn from the ``random.Random`` passed in (in
  Kafka's order: start index, then shift), so results are reproducible with a seed.
* :func:`rack_alternated_broker_list` — the rack-alternated broker order of §4.3.
* :func:`assignment_for_new_partitions` — placement of added partitions (§2.4).
* :func:`validate_manual_assignment` and :func:`parse_replica_assignment` — explicit
  ``--replica-assignment`` checks (V6 cases, duplicates, unknown brokers).

Failure: every refusal raises a :mod:`kafka_zk.errors` type carrying Kafka's own message
(§4.1), e.g. ``Replication factor: 4 larger than available brokers: 3.``
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Iterator, Literal, Mapping, Sequence

from kafka_zk.codecs import TopicAssignment
from kafka_zk.errors import (BrokerNotAvailable, InvalidInput, InvalidReplicaAssignment,
                             InvalidReplicationFactor)

RackMode = Literal["enforced", "disabled", "safe"]

NOT_ALL_RACKS_ENFORCED = ("Not all brokers have rack information. Add --disable-rack-aware in command "
                          "line to make replica assignment without rack information.")
NOT_ALL_RACKS = "Not all brokers have rack information for replica rack aware assignment."


def _id_rack(broker: Any) -> tuple[int, str | None]:
    if isinstance(broker, (tuple, list)):
        return int(broker[0]), (broker[1] if len(broker) > 1 else None)
    if isinstance(broker, int):
        return broker, None
    return int(broker.id), getattr(broker, "rack", None)


def rack_alternated_broker_list(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered one per rack in turn: racks sorted by name, ids ascending within a rack."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    rack_names = sorted(by_rack)
    iterators = {r: iter(sorted(by_rack[r])) for r in rack_names}
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        nxt = next(iterators[rack_names[i]], None)
        if nxt is not None:
            out.append(nxt)
        i = (i + 1) % len(rack_names)
    return out


def _replica_index(first: int, second_shift: int, k: int, n: int) -> int:
    shift = 1 + (second_shift + k) % (n - 1)
    return (first + shift) % n


def _start_values(n: int, fixed_start_index: int, rng: random.Random | None) -> tuple[int, int]:
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    rng = rng or random.Random()
    start = rng.randrange(n)
    shift = rng.randrange(n)
    return start, shift


def _walk(n: int, n_partitions: int, fixed_start_index: int, start_partition_id: int,
          rng: random.Random | None) -> Iterator[tuple[int, int, int]]:
    """Kafka's walk over the partitions: (partition id, its first replica's index, the shift), the
    shift growing by one each time the ids wrap round the broker list."""
    start, shift = _start_values(n, fixed_start_index, rng)
    pid = max(0, start_partition_id)
    for _ in range(n_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        yield pid, (pid + start) % n, shift
        pid += 1


def _unaware(ids: Sequence[int], n_partitions: int, rf: int, fixed_start_index: int,
             start_partition_id: int, rng: random.Random | None) -> dict[int, tuple[int, ...]]:
    n = len(ids)
    out: dict[int, tuple[int, ...]] = {}
    for pid, first, shift in _walk(n, n_partitions, fixed_start_index, start_partition_id, rng):
        out[pid] = (ids[first], *(ids[_replica_index(first, shift, j, n)] for j in range(rf - 1)))
    return out


def _aware(racks: Mapping[int, str], n_partitions: int, rf: int, fixed_start_index: int,
           start_partition_id: int, rng: random.Random | None) -> dict[int, tuple[int, ...]]:
    arranged = rack_alternated_broker_list(racks)
    n = len(arranged)
    num_racks = len(set(racks.values()))
    out: dict[int, tuple[int, ...]] = {}
    for pid, first, shift in _walk(n, n_partitions, fixed_start_index, start_partition_id, rng):
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _slot in range(rf - 1):
            while True:
                b = arranged[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                if ((racks[b] not in racks_used or len(racks_used) == num_racks)
                        and (b not in brokers_used or len(brokers_used) == n)):
                    replicas.append(b)
                    racks_used.add(racks[b])
                    brokers_used.add(b)
                    break
        out[pid] = tuple(replicas)
    return out


def assign_replicas(brokers: Sequence[Any], n_partitions: int, rf: int, fixed_start_index: int = -1,
                    start_partition_id: int = -1, rng: random.Random | None = None,
                    rack_mode: RackMode = "enforced") -> dict[int, tuple[int, ...]]:
    """Kafka's ``assignReplicasToBrokers``: partition id → ordered replicas (first = leader).

    ``brokers`` are objects with ``id``/``rack`` or ``(id, rack)`` tuples, in the order Kafka's
    ZK tooling uses (sorted by id; this function does not re-sort, as Kafka does not).
    """
    pairs = [_id_rack(b) for b in brokers]
    if rack_mode not in ("enforced", "disabled", "safe"):
        raise InvalidInput(f"rack mode {rack_mode!r} is not one of enforced, disabled, safe")
    with_rack = [r for _, r in pairs if r is not None]
    if rack_mode == "enforced" and with_rack and len(with_rack) != len(pairs):
        raise InvalidInput(NOT_ALL_RACKS_ENFORCED)
    if rack_mode == "disabled" or (rack_mode == "safe" and len(with_rack) != len(pairs)):
        pairs = [(i, None) for i, _ in pairs]
    if n_partitions <= 0:
        raise InvalidInput("Number of partitions must be larger than 0.")
    if rf <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if rf > len(pairs):
        raise InvalidReplicationFactor(f"Replication factor: {rf} larger than available brokers: {len(pairs)}.")
    racks = {i: r for i, r in pairs if r is not None}
    if not racks:
        return _unaware([i for i, _ in pairs], n_partitions, rf, fixed_start_index,
                        start_partition_id, rng)
    if len(racks) != len(pairs):
        raise InvalidInput(NOT_ALL_RACKS)
    return _aware(racks, n_partitions, rf, fixed_start_index, start_partition_id, rng)


def assignment_for_new_partitions(existing: TopicAssignment, live_brokers: Sequence[Any], new_count: int,
                                  topic: str = "<topic>", rack_mode: RackMode = "enforced"
                                  ) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``len(existing) .. new_count-1`` placed as Kafka's ``--alter`` does.

    Brokers = live brokers sorted by id; start index = index of the first broker whose id ≥ the
    first replica of partition 0 (0 if none), used as fixed start index; start partition id =
    current count; RF = size of partition 0's list (docs/zookeeper.md §2.4).
    """
    current = len(existing.partitions)
    if new_count <= current:
        raise InvalidInput(f"The number of partitions for a topic can only be increased. Topic {topic} "
                           f"currently has {current} partitions, {new_count} would not be an increase.")
    if 0 not in existing.partitions:
        raise InvalidInput(f"Topic {topic}: partition 0 is missing from /brokers/topics/{topic}; cannot "
                           "derive the replication factor for new partitions")
    p0 = existing.partitions[0]
    brokers = sorted((_id_rack(b) for b in live_brokers), key=lambda x: x[0])
    start = next((i for i, (bid, _) in enumerate(brokers) if bid >= p0[0]), 0)
    return assign_replicas(brokers, new_count - current, len(p0), fixed_start_index=start,
                           start_partition_id=current, rack_mode=rack_mode)


def validate_manual_assignment(assignment: Mapping[int, Sequence[int]],
                               live_broker_ids: Iterable[int] | None = None) -> None:
    """Kafka's checks on an explicit assignment (V6) plus registered brokers.

    Same RF everywhere, no duplicate broker in a list, partition ids 0..n-1, and (when
    ``live_broker_ids`` is given) every broker registered.
    """
    if not assignment:
        raise InvalidReplicaAssignment("Replica assignment is empty: give at least one partition, "
                                       "e.g. --replica-assignment 0:1,1:2")
    if any(len(r) == 0 for r in assignment.values()):
        raise InvalidReplicaAssignment("Partition replica lists cannot be empty: list at least one broker "
                                       "per partition")
    text = "{" + ", ".join(f"{p}: [{','.join(map(str, r))}]" for p, r in sorted(assignment.items())) + "}"
    if len({len(r) for r in assignment.values()}) != 1:
        raise InvalidReplicaAssignment(f"All partitions should have the same number of replicas: {text}")
    for reps in assignment.values():
        if len(reps) != len(set(reps)):
            raise InvalidReplicaAssignment(f"Duplicate replica assignment found: {text}")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignment(
            f"partitions should be a consecutive 0-based integer sequence: {text}")
    if live_broker_ids is not None:
        live = set(live_broker_ids)
        unknown = sorted({b for r in assignment.values() for b in r} - live)
        if unknown:
            raise BrokerNotAvailable(
                f"Replica assignment names broker(s) {','.join(map(str, unknown))} that are not registered "
                f"under /brokers/ids (live brokers: {','.join(map(str, sorted(live))) or 'none'}); "
                "use live broker ids")


def parse_replica_assignment(text: str) -> dict[int, tuple[int, ...]]:
    """Parse ``--replica-assignment`` (``1:2,3:4`` = partition 0 on 1,2 and partition 1 on 3,4)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidReplicaAssignment("--replica-assignment is empty: write e.g. 0:1,1:2 (partitions "
                                       "separated by ',', brokers of a partition by ':')")
    out: dict[int, tuple[int, ...]] = {}
    for pid, group in enumerate(text.strip().split(",")):
        items = [s.strip() for s in group.split(":")]
        if not all(s.isascii() and s.isdigit() for s in items):
            raise InvalidReplicaAssignment(
                f"--replica-assignment {text!r}: {group!r} is not a ':'-separated list of broker ids; "
                "write e.g. 0:1,1:2")
        brokers = tuple(int(s) for s in items)
        dups = sorted({b for b in brokers if brokers.count(b) > 1})
        if dups:
            raise InvalidReplicaAssignment(
                f"Partition replica lists may not contain duplicate entries: {','.join(map(str, dups))}")
        if pid > 0 and len(brokers) != len(out[0]):
            raise InvalidReplicaAssignment(
                f"Partition {pid} has different replication factor: {','.join(map(str, brokers))}")
        out[pid] = brokers
    return out
