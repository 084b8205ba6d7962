"""Replace a broker by another: "replace 4 with 7" — the new broker takes exactly the old one's replicas.

Each partition that lists an old broker gets the new broker *in the old one's position* of its
replica list (so the preferred leader is where it was: where 4 was first, 7 is first), and
nothing else changes: the moves are the old broker's replicas, one each — the minimum by
construction, no placement choice, no balancing. Works whether the old broker is alive (a
hardware swap) or dead (down, still listed: its replicas are copied from the live leaders; a
partition with no live in-sync replica is left out, ``Plan.stranded``, as a decommission does:
:mod:`planning.dead_brokers`). Several pairs at once are allowed (4→7, 5→8).

Failure: :class:`PlanRefused`, each naming the fix: an old broker equal to its new one; a new
broker not registered (it must be up to receive data), named twice, or also an old one; an old
broker neither registered nor holding replicas; a new broker already in a partition's list
(it would appear twice); a new broker in another rack than the old one when that leaves a
partition with fewer racks (a dead broker's rack is unknown: the racks kept are the other
replicas'); a partition to move with a reassignment in flight.
"""

from __future__ import annotations

from typing import Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.dead_brokers import dead_among, has_no_source
from planning.model import Move, Plan, PlanRefused, make_plan
from planning.kernels.decommission import refuse_reassigning
from planning.kernels.loads import distinct_racks, rack_map, rack_of, size_of

OPERATION = "replace"
SHOWN = 5


def pairs_text(pairs: Mapping[int, int]) -> str:
    """``4:7,5:8``: the form ``--replace`` takes and ``summary.json``'s ``params.replace`` keeps."""
    return ",".join(f"{old}:{new}" for old, new in sorted(pairs.items()))


def check_pairs(snapshot: ClusterSnapshot, pairs: Mapping[int, int]) -> None:
    """The pairs against the registered brokers and the replicas (see module docstring)."""
    if not pairs:
        raise PlanRefused("no broker to replace: give at least one pair OLD:NEW, e.g. --replace 4:7")
    same = sorted(old for old, new in pairs.items() if old == new)
    if same:
        raise PlanRefused(f"replace {same[0]} with {same[0]}: the new broker must differ from the one it replaces; "
                          "give another broker id as the new one")
    news = list(pairs.values())
    twice = sorted({b for b in news if news.count(b) > 1})
    if twice:
        raise PlanRefused(f"broker {twice[0]} is named as the new broker of several: "
                          f"{', '.join(str(o) for o, n in sorted(pairs.items()) if n == twice[0])}; give each old "
                          "broker its own new broker")
    both = sorted(set(pairs) & set(news))
    if both:
        raise PlanRefused(f"broker {both[0]} is both replaced and a replacement; replace it in a separate run")
    unregistered = sorted(b for b in news if b not in snapshot.brokers)
    if unregistered:
        raise PlanRefused(f"new broker(s) {unregistered} are not registered under /brokers/ids (registered: "
                          f"{sorted(snapshot.brokers)}); start the new broker first: it must be up to receive "
                          "the replicas")
    hosting = {b for p in snapshot.partitions() for b in p.replicas if b in pairs}
    unknown = sorted(b for b in pairs if b not in snapshot.brokers and b not in hosting)
    if unknown:
        raise PlanRefused(f"broker(s) {unknown} to replace are neither registered (registered: "
                          f"{sorted(snapshot.brokers)}) nor hold any replica; check the broker ids")


def _rack_name(snapshot: ClusterSnapshot, b: int) -> str:
    broker = snapshot.brokers.get(b)
    return "unknown (not registered)" if broker is None else repr(broker.rack)


def plan_replace(snapshot: ClusterSnapshot, pairs: Mapping[int, int],
                 sizes: Mapping[TopicPartition, int] | None = None, seed: int = 0) -> Plan:
    """The plan that puts ``pairs[old]`` in place of ``old`` in every replica list (module docstring)."""
    pairs = {int(o): int(n) for o, n in pairs.items()}
    check_pairs(snapshot, pairs)
    olds = frozenset(pairs)
    dead = dead_among(snapshot, olds)
    affected = [p for p in snapshot.partitions() if not olds.isdisjoint(p.replicas)]
    stranded = tuple(p.tp for p in affected
                     if dead and not dead.isdisjoint(p.replicas) and has_no_source(p, snapshot.brokers))
    if stranded:
        left = set(stranded)
        affected = [p for p in affected if p.tp not in left]
    refuse_reassigning(affected)
    doubled = [(p, pairs[b]) for p in affected for b in p.replicas if b in pairs and pairs[b] in p.replicas]
    if doubled:
        shown = "; ".join(f"{p.tp} (replicas {list(p.replicas)})" for p, _ in doubled[:SHOWN])
        more = f" and {len(doubled) - SHOWN} more" if len(doubled) > SHOWN else ""
        first_new = doubled[0][1]
        raise PlanRefused(f"new broker {first_new} already holds a replica of {len(doubled)} partition(s) that "
                          f"list the broker it replaces: {shown}{more}; it would be listed twice. Pick a new broker "
                          "that holds none of them (a freshly added broker), or decommission the old broker "
                          "instead (its planner chooses a destination per replica)")
    racks = rack_map(snapshot.brokers)
    allowed = len({rack_of(racks, b) for b in snapshot.brokers if b not in olds})
    moves = []
    fewer = []
    for p in affected:
        target = tuple(pairs.get(b, b) for b in p.replicas)
        # the rack rule every plan keeps (planning.kernels.validate rule 6); a dead broker's rack is
        # unknown (not registered): the racks to keep are the other replicas'
        need = min(distinct_racks([b for b in p.replicas if b not in dead], racks), len(target), allowed)
        if distinct_racks(target, racks) < need:
            fewer.append(p)
        leader = p.leader if p.leader is not None and p.leader >= 0 and p.leader not in dead else \
            next((b for b in p.isr if b in snapshot.brokers and b not in olds),
                 next((b for b in p.replicas if b not in olds), p.leader))
        moves.append(Move(p.tp, p.replicas, target, size_of(sizes, p.tp), leader))
    if fewer:
        shown = ", ".join(str(p.tp) for p in fewer[:SHOWN])
        more = f" and {len(fewer) - SHOWN} more" if len(fewer) > SHOWN else ""
        racks_text = "; ".join(f"broker {o} is in rack {_rack_name(snapshot, o)}, broker {n} in rack "
                               f"{_rack_name(snapshot, n)}" for o, n in sorted(pairs.items()))
        raise PlanRefused(f"{racks_text}: {len(fewer)} partition(s) would span fewer racks, the new broker sharing a "
                          f"rack with another of their replicas ({shown}{more}); pick a new broker in the old one's "
                          "rack, or decommission the old broker instead")
    return make_plan(OPERATION, moves, seed, removed=olds, sized=bool(sizes),
                     params={"replace": pairs_text(pairs), "brokers": ",".join(map(str, sorted(olds)))},
                     dead=dead, stranded=stranded)
