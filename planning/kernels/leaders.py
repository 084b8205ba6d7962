"""Even preferred-leader counts by re-ordering replica lists: no data moves, no replica set changes.

:func:`even_leaders` hands preferred leadership from brokers that lead too many partitions to
brokers that lead too few, among the replicas each partition allows (``allowed``): a plan's
moved partitions may take any replica of their new list (the reassignment makes it preferred
once the copy is in sync); partitions the plan does not move only an in-sync replica (the
change is then a preferred-leader election, no data). Partitions listed in ``first`` are
re-ordered before the others, so a plan touches partitions it does not move only where the
moved ones cannot even the counts.

Two steps, both lowering the sum of squared leader counts (so they end):

1. direct hand-overs: a partition led by a broker two or more leaderships above another of
   its allowed replicas changes its preferred leader to the least-leading of them;
2. chains, breadth first: A leads a partition where B is allowed, B one where C is, … up to a
   broker two or more below A: every broker on the chain keeps its count except the ends. This
   reaches spread ≤ 1 whenever any re-ordering of the allowed replicas can (a max-flow
   augmenting-path argument); otherwise it stops when no chain exists.

Linear in partitions per pass; the chains are found from the few brokers at the extremes.
Failure: none (a cluster whose replicas allow no better order is left as even as it can be).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, MutableMapping, Sequence

from kafka_zk.codecs import TopicPartition

Allowed = Callable[[TopicPartition], Sequence[int]]


def even_leaders(targets: MutableMapping[TopicPartition, list[int]], counts: dict[int, int],
                 members: Iterable[int], allowed: Allowed, ranks: Mapping[int, int],
                 first: Iterable[TopicPartition] = (), spread: int = 1) -> set[TopicPartition]:
    """Re-order ``targets`` (tp → replica list, changed in place) until preferred-leader counts
    over ``members`` are within ``spread`` (or no re-ordering helps); ``counts`` is kept current.
    Returns the partitions whose preferred leader changed."""
    members = sorted(set(members))
    member_set = set(members)
    for b in members:
        counts.setdefault(b, 0)
    preferred = list(dict.fromkeys(first))
    seen = set(preferred)
    order = preferred + [tp for tp in targets if tp not in seen]
    led: dict[int, dict[TopicPartition, None]] = {b: {} for b in members}
    for tp in order:
        lead = targets[tp][0]
        if lead in led:
            led[lead][tp] = None
    start = {tp: targets[tp][0] for tp in order}

    def hand_over(tp: TopicPartition, a: int, b: int) -> None:
        reps = targets[tp]
        j = reps.index(b)
        reps[0], reps[j] = reps[j], reps[0]
        del led[a][tp]
        led[b][tp] = None
        counts[a] -= 1
        counts[b] += 1

    def options(tp: TopicPartition) -> list[int]:
        lead = targets[tp][0]
        return [b for b in allowed(tp) if b != lead and b in member_set and b in targets[tp]]

    def spread_now() -> int:
        return max(counts[b] for b in members) - min(counts[b] for b in members)

    if len(members) < 2 or spread_now() <= spread:
        return set()
    # 1. direct hand-overs, most-leading brokers first, preferred partitions first; only off a
    #    broker above its share or onto one below it (no churn in the middle)
    total = sum(counts[b] for b in members)
    floor_share, ceil_share = total // len(members), -(-total // len(members))
    for _round in range(4):
        changed = False
        for a in sorted(members, key=lambda b: (-counts[b], ranks.get(b, b))):
            for tp in list(led[a]):
                if targets[tp][0] != a:
                    continue
                opts = options(tp)
                if not opts:
                    continue
                low = min(opts, key=lambda b: (counts[b], ranks.get(b, b)))
                if counts[low] <= counts[a] - 2 and (counts[a] > ceil_share or counts[low] < floor_share):
                    hand_over(tp, a, low)
                    changed = True
        if not changed or spread_now() <= spread:
            break
    # 2. chains from the most-leading brokers to ones two below, or into the least-leading ones
    for _step in range(len(order) + 1):
        hi = max(counts[b] for b in members)
        lo = min(counts[b] for b in members)
        if hi - lo <= spread:
            break
        path = (chain(led, options, [b for b in members if counts[b] == hi], lambda b: counts[b] <= hi - 2, ranks)
                or chain(led, options, [b for b in members if counts[b] >= lo + 2], lambda b: counts[b] == lo,
                          ranks))
        if path is None:
            break
        for a, tp, b in path:
            hand_over(tp, a, b)
    return {tp for tp, lead in start.items() if targets[tp][0] != lead}


def chain(led: Mapping[int, Iterable[TopicPartition]], options: Callable[[TopicPartition], list[int]],
           sources: list[int], is_sink: Callable[[int], bool], ranks: Mapping[int, int]) -> list | None:
    """Breadth first: the shortest chain of (leader, partition, new leader) from a source to a
    broker ``is_sink`` accepts, or None."""
    parent: dict[int, tuple] = {s: () for s in sources}
    frontier = sorted(sources, key=lambda b: ranks.get(b, b))
    while frontier:
        nxt = []
        for a in frontier:
            for tp in led.get(a, ()):
                for b in options(tp):
                    if b in parent:
                        continue
                    parent[b] = (a, tp)
                    if is_sink(b):
                        path = []
                        while parent[b]:
                            a2, tp2 = parent[b]
                            path.append((a2, tp2, b))
                            b = a2
                        return path[::-1]
                    nxt.append(b)
        frontier = nxt
    return None
