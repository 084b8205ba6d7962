"""Greedy replica placement: pick the least-loaded eligible broker, rack-aware, seeded ties.

:class:`Placer` keeps candidate brokers in a heap keyed by (replica count, bytes, seeded rank)
with lazy invalidation, so one pick costs a few heap operations even with hundreds of brokers
and a million partitions. Eligibility: not already a replica of the partition and, when
possible, in a rack the partition does not use yet; when no unused rack has a candidate, the
least-used rack is taken (the plan then notes a rack the partition has to share).

:class:`LeaderBalancer` picks preferred leaders among a partition's replicas, fewest preferred
leaderships first. Ties are broken only by ranks drawn from ``random.Random(seed)``.

Disk limits (optional, bytes per broker): a broker whose bytes plus the replica's would pass its
limit is not a candidate. When a partition's unused racks have candidates but none has room,
:class:`DiskFull` is raised (the kernel turns it into a refusal that says what would fit); rack
sharing is never used to dodge a full disk.

One placer for every kernel: decommission, add-brokers' and move-topics' destinations, RF
increases, and the stuck-reassignment rewrite (:func:`replacement_targets`, a broker in place of
each unregistered one in a stuck target). Neither ``kafka_zk`` nor ``operators`` may import
``spark_jobs``, so the stuck runbook gets those targets like every runbook gets a plan: the plan
job's ``replace-dead-targets`` operation (:mod:`planning.kernels.stuck_rewrite`) writes them to a
plan folder, which the runbook reads and hands to :func:`kafka_zk.admin.stuck_fixes.choose_fixes`,
rather than ``kafka_zk`` keeping a second placement rule of its own.

Failure: :class:`PlanRefused` when a partition has no candidate broker at all (more replicas
than eligible brokers); :class:`DiskFull` (a PlanRefused) when candidates exist but none has room.
"""

from __future__ import annotations

import heapq
import random
from typing import Iterable, Mapping, Sequence

from kafka_zk.admin.stuck import DEAD_TARGET, StuckPartition
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
from planning.model import PlanRefused
from planning.kernels.leaders import chain
from planning.kernels.loads import Loads, cluster_loads, rack_map, rack_of

PER_RACK_HEAPS = 16


class DiskFull(PlanRefused):
    """No eligible broker has disk room for a new replica (under the plan's disk limits)."""


def seeded_ranks(broker_ids: Iterable[int], seed: int) -> dict[int, int]:
    """A seeded permutation rank per broker: the only tie-breaker of every kernel."""
    ids = sorted(broker_ids)
    order = list(ids)
    random.Random(seed).shuffle(order)
    return {b: i for i, b in enumerate(order)}


class Placer:
    """Least-loaded-first destination choice among ``candidates`` (live, allowed brokers).

    With few racks (≤ :data:`PER_RACK_HEAPS`) there is one heap per rack, so a pick looks only
    at the top of each rack the partition does not use yet (a single heap would pop every
    broker of the used racks first); with many racks (e.g. no rack information: one pseudo-rack
    per broker) one heap. Both give the same choice: the smallest (key, broker) among eligible
    brokers.
    """

    def __init__(self, candidates: Sequence[int], loads: Loads, racks: Mapping[int, str],
                 ranks: Mapping[int, int], by_bytes: bool, limits: Mapping[int, int] | None = None) -> None:
        self.loads = loads
        self.limits = dict(limits or {})
        self.racks = racks
        self.ranks = ranks
        self.by_bytes = by_bytes
        self.candidates = sorted(candidates)
        self._version = {b: 0 for b in self.candidates}
        rack_set = {racks[b] for b in self.candidates}
        self._rack_heaps: dict[str, list[tuple[tuple[int, int, int], int, int]]] | None = (
            {r: [] for r in sorted(rack_set)} if len(rack_set) <= PER_RACK_HEAPS else None)
        self._heap: list[tuple[tuple[int, int, int], int, int]] = []
        for b in self.candidates:
            self._push(b)

    def _key(self, b: int) -> tuple[int, int, int]:
        return (self.loads.replicas.get(b, 0), self.loads.bytes.get(b, 0) if self.by_bytes else 0,
                self.ranks[b])

    def _push(self, b: int) -> None:
        heap = self._heap if self._rack_heaps is None else self._rack_heaps[self.racks[b]]
        heapq.heappush(heap, (self._key(b), b, self._version[b]))

    def add(self, b: int, size: int, delta: int = 1) -> None:
        """Charge (or with ``delta=-1`` release) one replica of ``size`` bytes on ``b``."""
        self.loads.replicas[b] = self.loads.replicas.get(b, 0) + delta
        self.loads.bytes[b] = self.loads.bytes.get(b, 0) + delta * size
        if b in self._version:
            self._version[b] += 1
            self._push(b)

    def charge_bytes(self, b: int, delta: int) -> None:
        """Change ``b``'s bytes by ``delta`` with its replica count kept (a trade of new replicas)."""
        self.loads.bytes[b] = self.loads.bytes.get(b, 0) + delta
        if b in self._version:
            self._version[b] += 1
            self._push(b)

    def fits(self, b: int, size: int) -> bool:
        """Whether ``b`` has disk room for ``size`` more bytes under its limit (no limit: yes)."""
        limit = self.limits.get(b)
        return limit is None or self.loads.bytes.get(b, 0) + size <= limit

    def pick(self, replicas: Iterable[int], size: int) -> int:
        """Choose and charge a destination for a new replica of a partition on ``replicas``.

        ``replicas`` are the partition's other replicas (kept ones and ones already chosen).
        """
        taken = set(replicas)
        racks = self.racks
        used_racks = {racks.get(b, f"\0{b}") for b in taken}
        chosen = -1
        if self._rack_heaps is not None:
            chosen = self._pick_by_rack(used_racks, size)
        else:
            chosen = self._pick_global(taken, used_racks, size)
        if chosen < 0:
            if self.limits and any(b not in taken and racks[b] not in used_racks for b in self.candidates):
                raise DiskFull(f"no broker of a rack the partition does not use yet has room for "
                               f"{size} more bytes next to {sorted(taken)}")
            chosen = self._pick_shared_rack(taken, size)
        self.add(chosen, size)
        return chosen

    def _pick_by_rack(self, used_racks: set[str], size: int) -> int:
        """Top valid entry of every unused rack's heap; the smallest wins (−1: none).

        A broker of an unused rack cannot be one of the partition's replicas, so no other check.
        With disk limits the top entry with room is taken instead of the top entry.
        """
        version = self._version
        best = None
        for r, heap in self._rack_heaps.items():  # type: ignore[union-attr]
            if r in used_racks:
                continue
            if self.limits:
                top = self._top(heap, lambda b: self.fits(b, size))
            else:
                while heap and heap[0][2] != version[heap[0][1]]:
                    heapq.heappop(heap)
                top = heap[0] if heap else None
            if top is not None and (best is None or top < best):
                best = top
        return -1 if best is None else best[1]

    def _pick_global(self, taken: set[int], used_racks: set[str], size: int) -> int:
        top = self._top(self._heap, lambda b: b not in taken and self.racks[b] not in used_racks
                        and self.fits(b, size))
        return -1 if top is None else top[1]

    def _top(self, heap: list[tuple[tuple[int, int, int], int, int]], ok) -> tuple | None:
        """The smallest current entry of ``heap`` whose broker passes ``ok`` (popped ones go back)."""
        popped: list[tuple[tuple[int, int, int], int, int]] = []
        found = None
        while heap:
            entry = heapq.heappop(heap)
            if entry[2] != self._version[entry[1]]:
                continue
            popped.append(entry)
            if ok(entry[1]):
                found = entry
                break
        for entry in popped:
            heapq.heappush(heap, entry)
        return found

    def _pick_shared_rack(self, taken: set[int], size: int) -> int:
        """No unused rack has a candidate: least-used rack, then least-loaded broker with room."""
        rack_use: dict[str, int] = {}
        for b in taken:
            r = rack_of(self.racks, b)
            rack_use[r] = rack_use.get(r, 0) + 1
        best = None
        short = False
        for b in self.candidates:
            if b in taken:
                continue
            if not self.fits(b, size):
                short = True
                continue
            key = (rack_use.get(self.racks[b], 0),) + self._key(b)
            if best is None or key < best[0]:
                best = (key, b)
        if best is None and short:
            raise DiskFull(f"no broker has room for {size} more bytes next to {sorted(taken)}")
        if best is None:
            raise PlanRefused(f"no broker is left for a new replica next to {sorted(taken)}: "
                              f"the partition needs more brokers than the {len(self.candidates)} "
                              "allowed ones; lower its replication factor or allow more brokers")
        return best[1]

    def eligible(self, b: int, others: Iterable[int]) -> bool:
        """Whether ``b`` could hold a replica next to ``others`` without sharing a rack."""
        others = set(others)
        return b not in others and self.racks[b] not in {rack_of(self.racks, o) for o in others}


class LeaderBalancer:
    """Choose preferred leaders so preferred-leader counts stay even."""

    def __init__(self, loads: Loads, ranks: Mapping[int, int], live: Iterable[int]) -> None:
        self.loads = loads
        self.ranks = ranks
        self.live = frozenset(live)

    def order(self, replicas: tuple[int, ...]) -> tuple[int, ...]:
        """``replicas`` with the chosen preferred leader (a live one) swapped to position 0."""
        pool = [b for b in replicas if b in self.live] or list(replicas)
        leader = min(pool, key=lambda b: (self.loads.leaders.get(b, 0), self.ranks.get(b, b)))
        self.loads.leaders[leader] = self.loads.leaders.get(leader, 0) + 1
        if replicas[0] == leader:
            return replicas
        out = list(replicas)
        i = out.index(leader)
        out[0], out[i] = out[i], out[0]
        return tuple(out)

    def repair(self, targets: dict, chosen: Iterable, movable: Iterable = ()) -> set:
        """Even the leader counts by reordering partitions that move anyway; return those whose
        preferred leader :meth:`_augment` changed among ``movable``.

        ``targets`` maps tp → ordered replicas (updated in place). ``chosen``: partitions whose
        preferred leader this balancer picked (their old one is gone); ``movable``: other
        partitions of the plan, whose preferred leader changes only where the counts cannot
        otherwise be evened. First direct swaps on ``chosen`` (a leader with a replica of the same
        partition > 1 leadership below it), then :meth:`_augment` (chains of such swaps across
        partitions, ``movable`` included), then direct swaps again on every partition reordered.
        Every step lowers the sum of squared leader counts, so it ends; replica sets never change.
        """
        tps = list(chosen)
        self._swap(targets, tps)
        first = {tp: targets[tp][0] for tp in movable}
        if self._augment(targets, tps + list(first)):
            changed = [tp for tp, lead in first.items() if targets[tp][0] != lead]
            self._swap(targets, tps + changed)
        return {tp for tp, lead in first.items() if targets[tp][0] != lead}

    def _swap(self, targets: dict, tps: list) -> None:
        counts = self.loads.leaders
        for _round in range(len(tps) + 1):
            changed = False
            for tp in tps:
                replicas = targets[tp]
                lead = replicas[0]
                low = min((b for b in replicas[1:] if b in self.live), key=lambda b: (counts.get(b, 0), self.ranks.get(b, b)),
                          default=None)
                if low is not None and counts.get(low, 0) < counts.get(lead, 0) - 1:
                    targets[tp] = _to_front(replicas, low)
                    counts[lead] -= 1
                    counts[low] = counts.get(low, 0) + 1
                    changed = True
            if not changed:
                return

    def _augment(self, targets: dict, tps: list) -> bool:
        """Shift leaderships along paths A → B → … → Z (A leads a chosen partition where B is a
        replica, B one where C is, …) from a broker with the most leaderships to one with at least
        two fewer, or from one with at least two more than the fewest to a broker with the fewest:
        each path moves one leadership from its first broker to its last, the ones between keep
        their counts. Ends when neither kind of path exists (spread ≤ 1, or no reorder of the
        chosen partitions can lower it). Returns whether anything changed."""
        counts = self.loads.leaders
        live = sorted(self.live)
        if len(live) < 2:
            return False
        led: dict[int, list] = {b: [] for b in live}
        for tp in tps:
            if targets[tp][0] in led:
                led[targets[tp][0]].append(tp)
        changed = False
        for _step in range(len(tps) * len(live) + 1):
            hi = max(counts.get(b, 0) for b in live)
            lo = min(counts.get(b, 0) for b in live)
            if hi - lo <= 1:
                break
            path = (self._path(targets, led, [b for b in live if counts.get(b, 0) == hi],
                               lambda b: counts.get(b, 0) <= hi - 2)
                    or self._path(targets, led, [b for b in live if counts.get(b, 0) >= lo + 2],
                                  lambda b: counts.get(b, 0) == lo))
            if path is None:
                break
            for a, tp, b in path:
                targets[tp] = _to_front(targets[tp], b)
                led[a].remove(tp)
                led[b].append(tp)
            counts[path[0][0]] -= 1
            counts[path[-1][2]] = counts.get(path[-1][2], 0) + 1
            changed = True
        return changed

    def _path(self, targets: dict, led: dict, sources: list, is_sink) -> list | None:
        """Breadth-first: the shortest chain of (leader, partition, new leader) from a source to a
        broker ``is_sink`` accepts, or None (:func:`planning.kernels.leaders.chain`)."""
        live = self.live
        return chain(led, lambda tp: [b for b in targets[tp][1:] if b in live], sources, is_sink, self.ranks)


def _to_front(replicas, b: int) -> tuple[int, ...]:
    """``replicas`` with ``b`` swapped into position 0."""
    out = list(replicas)
    i = out.index(b)
    out[0], out[i] = out[i], out[0]
    return tuple(out)


def replacement_targets(snapshot: ClusterSnapshot,
                        stuck: Iterable[StuckPartition]) -> dict[TopicPartition, tuple[int, ...]]:
    """New targets for stuck partitions whose target names unregistered brokers: each such broker
    replaced in place by the :class:`Placer`'s choice among the registered brokers (a rack the list
    does not use yet first, then the fewest replicas, ties to the lower id; never one already in
    the list). Raises :class:`InvalidInput` when no registered broker is left to take it."""
    live = sorted(snapshot.brokers)
    loads = cluster_loads(snapshot.partitions(), live, None)
    placer = Placer(live, loads, rack_map(snapshot.brokers), {b: b for b in live}, by_bytes=False)
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for s in stuck:
        if s.cause.kind != DEAD_TARGET:
            continue
        new = list(s.target)
        for i, b in enumerate(new):
            if b in snapshot.brokers:
                continue
            try:
                new[i] = placer.pick([x for x in new if x in snapshot.brokers], 0)
            except PlanRefused:
                raise InvalidInput(f"{s.tp}: no registered broker can replace broker {b} (live: {live}, target "
                                   f"{list(s.target)}); start a broker first") from None
        out[s.tp] = tuple(new)
    return out
