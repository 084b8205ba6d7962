"""Add-brokers rebalance and move-topics: least movement onto a broker set, balanced, rack-aware.

* :func:`plan_add_brokers` runs the balancing engine (:mod:`planning.kernels.balance`) with
  the new brokers as the only destinations: one replica at a time from the broker with the most
  replicas onto the new broker with the fewest, until counts are within one (the count minimum
  of moves), each replica chosen by size so bytes end near the mean; then free compound moves
  for bytes (an old broker gives a different replica, or two new brokers trade what they
  receive: no extra copy) and preferred leaders evened by re-ordering moved partitions, and
  unmoved ones (an in-sync replica) where needed. Every share is over the brokers that hold data
  after the plan: the registered brokers hosting replicas now plus the new ones (an empty,
  drained broker does not dilute the shares), minus ``exclude``.
* :func:`plan_move_topics` keeps every replica already inside ``broker_set`` and replaces the
  others in place with the least-loaded eligible brokers of the set (counts of that topic
  first, then cluster counts): the least-movement version of ``--generate``.

Failure: :class:`kafka_zk.errors.InputRefused` for a broker or topic list the shared parsers
refuse (empty, repeated, a topic that does not exist); :class:`PlanRefused` for unknown/non-live
brokers, a partition with more replicas than the broker set, or a touched partition with a
reassignment in flight.
"""

from __future__ import annotations

from typing import Collection, Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move, Plan, PlanRefused, make_plan
from kafka_zk.validation import check_topics_exist, parse_broker_ids, parse_topic_names
from planning.kernels.decommission import refuse_reassigning
from planning.kernels.loads import cluster_loads, rack_map, size_of
from planning.kernels.balance import Ledger, Limits, balance, bytes_note
from planning.kernels.placement import LeaderBalancer, Placer, seeded_ranks


def _live(snapshot: ClusterSnapshot, ids: Iterable[int], flag: str) -> list[int]:
    ids = sorted(parse_broker_ids(list(ids), flag))
    unknown = [b for b in ids if b not in snapshot.brokers]
    if unknown:
        raise PlanRefused(f"{flag}: broker(s) {unknown} are not registered (live: "
                          f"{sorted(snapshot.brokers)}); start them or fix the list")
    return ids


def plan_add_brokers(snapshot: ClusterSnapshot, new_brokers: Collection[int],
                     sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0,
                     exclude: Collection[int] = ()) -> Plan:
    """Move a balanced share of replicas, bytes and preferred leaderships onto ``new_brokers``."""
    new = _live(snapshot, new_brokers, "--brokers")
    excluded = frozenset(int(b) for b in exclude)
    clash = sorted(excluded & set(new))
    if clash:
        raise PlanRefused(f"broker(s) {clash} are both new (--brokers) and excluded; name each in one list only")
    parts = list(snapshot.partitions())
    refuse_reassigning([p for p in parts if p.is_reassigning and any(b in new for b in p.replicas)])
    hosting = {b for p in parts for b in p.replicas}
    members = sorted(((hosting & set(snapshot.brokers)) | set(new)) - excluded)
    led = Ledger(snapshot, members, sizes, rack_map(snapshot.brokers), seeded_ranks(members, seed))
    before = (led.count_spread(), led.bytes_relative(), max(led.leaders.values()) - min(led.leaders.values()))
    done = balance(led, new, Limits(paid_bytes_moves=False, one_move_per_partition=False, dst_first=True),
                   bool(sizes))
    after = (led.count_spread(), led.bytes_relative(), max(led.leaders.values()) - min(led.leaders.values()))
    bytes_part = (f", bytes spread {before[1]:.1%} → {after[1]:.1%}" if sizes else ", bytes unknown (no sizes)")
    notes = [f"add-brokers over {len(members)} broker(s) that hold data after the plan: replica spread "
             f"{before[0]} → {after[0]}{bytes_part}, preferred-leader spread {before[2]} → {after[2]}",
             f"{done.replicas_moved} replica move(s) onto {', '.join(map(str, new))}, {done.bytes_moved} bytes; "
             f"{done.leader_changes} preferred-leader change(s) (no data); {done.stopped_by}"]
    why = bytes_note(led, Limits().bytes_relative_spread) if sizes else None
    if why:
        notes.append(why)
    params = {"brokers": ",".join(map(str, new))}
    if excluded:
        params["exclude"] = ",".join(map(str, sorted(excluded)))
    return make_plan("add-brokers", list(done.moves), seed, sized=bool(sizes), params=params, notes=tuple(notes))


def topic_partitions(snapshot: ClusterSnapshot, topics: Iterable[str]):
    """Every partition of ``topics`` (read as :func:`kafka_zk.validation.parse_topic_names` reads
    ``--topics``; each must exist), by topic then partition."""
    names = parse_topic_names(list(topics), "--topics", required=True)
    check_topics_exist(names, snapshot.topics, "--topics")
    return [p for t in sorted(names) for p in (snapshot.topics[t].partitions[i]
                                               for i in sorted(snapshot.topics[t].partitions))]


def plan_move_topics(snapshot: ClusterSnapshot, topics: Iterable[str], broker_set: Collection[int],
                     sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0) -> Plan:
    """Every partition of ``topics`` onto ``broker_set``, keeping replicas already there."""
    allowed = _live(snapshot, broker_set, "--broker-list")
    parts = topic_partitions(snapshot, topics)
    refuse_reassigning([p for p in parts if p.is_reassigning])
    wide = [str(p.tp) for p in parts if len(p.replicas) > len(allowed)]
    if wide:
        raise PlanRefused(f"{len(wide)} partition(s) have more replicas than the {len(allowed)} brokers "
                          f"of the set ({', '.join(wide[:5])}); add brokers to --broker-list")
    racks = rack_map(snapshot.brokers)
    ranks = seeded_ranks(set(snapshot.brokers) | {b for p in parts for b in p.replicas}, seed)
    everything = cluster_loads(snapshot.partitions(), allowed, sizes)
    leaders = LeaderBalancer(everything, ranks, allowed)
    moves = []
    for topic in sorted({p.topic for p in parts}):
        tparts = [p for p in parts if p.topic == topic]
        loads = cluster_loads(tparts, allowed, None)
        loads.replicas = {b: loads.replicas.get(b, 0) for b in allowed}
        placer = Placer(allowed, loads, racks, ranks, by_bytes=False)
        for p in tparts:
            size = size_of(sizes, p.tp)
            new = list(p.replicas)
            for i, b in enumerate(p.replicas):
                if b not in allowed:
                    new[i] = placer.pick([x for x in new if x in allowed], size)
            target = tuple(new)
            if p.replicas[0] not in allowed:
                everything.leaders[p.replicas[0]] = everything.leaders.get(p.replicas[0], 1) - 1
                target = leaders.order(target)
            moves.append(Move(p.tp, p.replicas, target, size, p.leader))
    return make_plan("move-topics", moves, seed, sized=bool(sizes),
                     params={"topics": ",".join(sorted({p.topic for p in parts})),
                             "brokers": ",".join(map(str, allowed))})
