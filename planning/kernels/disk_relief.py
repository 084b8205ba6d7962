"""Extra moves that make disk room, when the user allows them: the way out of a full broker.

When no least-movement placement keeps every receiving broker under its disk limit, a user may
allow the plan to move *other* replicas too (``allow_extra_moves``): replicas of partitions that
the decommission does not touch, off each broker that would end over its limit, largest first
(fewest extra moves), onto a broker of the same rack or of a rack the partition does not use
(rack spread never shrinks) whose known limit leaves room, the emptiest first. Brokers whose
capacity is unknown never receive an extra replica. Each extra move is a 1-for-1 relocation and
is listed in the plan's notes; the summary's lower bound stays the least-movement one, so the
report shows what the room cost.

Pure. Failure: :func:`relieve` returns None when even every allowed extra move leaves a broker
over its limit (the caller then refuses, as without the option).
"""

from __future__ import annotations

from typing import Collection, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move
from planning.kernels.loads import rack_of, size_of


def relieve(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int], after: dict[int, int],
            limits: Mapping[int, int], racks: Mapping[int, str], touched: Collection[TopicPartition],
            removed: Collection[int], leaders: dict[int, int]) -> list[Move] | None:
    """Extra relocations bringing every over-limit broker of ``after`` under its limit, or None.

    ``after`` (bytes per broker once the planned moves are done) and ``leaders`` (preferred
    leaderships per broker) are updated in place; ``touched`` partitions (already moving) are
    never moved again. A relocated preferred leader hands the lead to the partition's replica
    with the fewest preferred leaderships.
    """
    over = sorted((b for b in after if b in limits and after[b] > limits[b]),
                  key=lambda b: (-(after[b] - limits[b]), b))
    if not over:
        return []
    gone, frozen, over_set = set(removed), set(touched), set(over)
    hosted: dict[int, list] = {b: [] for b in over}
    for p in snapshot.partitions():
        if p.tp in frozen:
            continue
        for b in p.replicas:
            if b in over_set:
                hosted[b].append(p)
    live = sorted(b for b in snapshot.brokers if b not in gone and b in limits)
    moves: list[Move] = []
    for b in over:
        for p in sorted(hosted[b], key=lambda p: (-size_of(sizes, p.tp), p.tp)):
            if after[b] <= limits[b]:
                break
            size = size_of(sizes, p.tp)
            if size <= 0 or p.tp in frozen:
                continue
            used = {rack_of(racks, o) for o in p.replicas if o != b}
            home = rack_of(racks, b)
            best = None
            for c in live:
                if c == b or c in p.replicas or after.get(c, 0) + size > limits[c]:
                    continue
                if rack_of(racks, c) != home and rack_of(racks, c) in used:
                    continue
                key = ((after.get(c, 0) + size) / limits[c], c)
                if best is None or key < best[0]:
                    best = (key, c)
            if best is None:
                continue
            c = best[1]
            target = [c if x == b else x for x in p.replicas]
            if p.replicas[0] == b:
                lead = min(target, key=lambda x: (leaders.get(x, 0), x))
                i = target.index(lead)
                target[0], target[i] = target[i], target[0]
                leaders[b] = leaders.get(b, 0) - 1
                leaders[lead] = leaders.get(lead, 0) + 1
            moves.append(Move(p.tp, p.replicas, tuple(target), size, p.leader))
            frozen.add(p.tp)
            after[b] -= size
            after[c] = after.get(c, 0) + size
        if after[b] > limits[b]:
            return None
    return moves
