"""The bytes phase of a least-movement plan: which new replica goes to which receiver, for bytes.

After the count phase each receiving broker takes a fixed number of new replicas; which ones is
free at equal moves and equal counts. Per rack (one group for brokers without racks),
:func:`repair_bytes` deals the rack's new replicas again, largest first, each to the receiver
whose remaining byte deficit per remaining slot is largest (the deficit is its distance to the
receivers' common level), then polishes with pairwise swaps (heaviest against lightest, the pair
nearest half their gap). So a broker that must take thousands of replicas takes replicas that
sum to what it lacks, however many there are; the cost is one sort and one heap operation per
new replica. A deal is kept only when it keeps every rule (no broker twice in a partition, the
rack rule, disk limits, the balance rule of :mod:`.balance_rule`) and does not widen the rack's
byte spread; otherwise the rack keeps the count phase's placement and only the swaps run (as
they do alone where the rack's receivers are already within :data:`DEAL_ABOVE` of each other).

:func:`bytes_notes` says, for the plan's notes, where a rack ends above 10 % and why: least
movement's own floor (the replicas brokers keep, which no new replica can offset) or the counts
and sizes of the new replicas. Pure; no failure of its own (a deal that cannot be completed is
dropped, not raised).
"""

from __future__ import annotations

import bisect
import heapq
from operator import itemgetter
from typing import Callable, Iterable

from kafka_zk.admin.stuck_fixes import bytes_text
from kafka_zk.codecs import TopicPartition
from planning.kernels.balance_rule import NewReplica, lower_taker
from planning.kernels.loads import rack_of, relative_spread
from planning.kernels.placement import Placer

SWAP_ROUNDS_PER_BROKER = 8  # polishing swaps after the deal: at most this many per receiver of a rack
DEAL_ABOVE = 0.05           # a rack's receivers more even than this (share of their mean) are left to the swaps
SWAP_STOP = 0.002           # no polishing swap once a rack's receivers are this close (share of their mean)
BYTES_TARGET = 0.10         # within-rack bytes spread the notes hold a plan to

Item = tuple[TopicPartition, int, int]    # a new replica: (tp, index in the target list, size)
NewReplicas = dict[int, list[Item]]       # broker -> the new replicas it received
_size = itemgetter(2)


class _Rule:
    """The balance rule for new replicas, checked cheaply: counts never change in this phase, so
    most checks end at "every broker is within one of the lowest" (then nothing is looked at) or
    at the lowest count of the racks a replica may move to; the full scan (:func:`lower_taker`)
    only where those cannot tell."""

    def __init__(self, placer: Placer, targets: dict[TopicPartition, list[int]], received: NewReplicas) -> None:
        self.placer = placer
        self.targets = targets
        self.counts = placer.loads.replicas
        cands = placer.candidates
        self.low = min((self.counts.get(c, 0) for c in cands), default=0)
        self.idle = all(self.counts.get(c, 0) <= self.low + 1 for c in cands)    # no rule can bind
        self.real = all(not placer.racks[c].startswith("\0") for c in cands)
        self.rack_low: dict[str, int] = {}
        for c in cands:
            r = placer.racks[c]
            self.rack_low[r] = min(self.rack_low.get(r, self.counts.get(c, 0)), self.counts.get(c, 0))
        self._floor: dict[frozenset[str], float] = {}
        self.new_at: dict[TopicPartition, list[int]] = {}      # target-list positions of new replicas
        if not self.idle:
            for items in received.values():
                for tp, i, _s in items:
                    self.new_at.setdefault(tp, []).append(i)

    def replica_ok(self, target: list[int], j: int, size: int) -> bool:
        """Whether the new replica at ``target[j]`` keeps the rule."""
        holder = target[j]
        count = self.counts.get(holder, 0)
        if count <= self.low + 1:
            return True
        racks = self.placer.racks
        replica = NewReplica.at(target, j, racks)
        if self.real and not replica.holder_shares_rack:
            used = replica.racks_used
            floor = self._floor.get(used)
            if floor is None:        # the lowest count of a rack it may move to (others are all in used racks)
                floor = self._floor[used] = min((n for r, n in self.rack_low.items() if r not in used),
                                                default=float("inf"))
            if floor >= count - 1:
                return True
        return lower_taker(replica, count, self.placer.candidates, self.counts, racks,
                           lambda c: self.placer.fits(c, size)) is None

    def holds(self, tp: TopicPartition, size: int, target: list[int] | None = None) -> bool:
        """Whether every new replica of ``tp`` keeps the rule with ``target`` (default: the current one)."""
        if self.idle:
            return True
        target = self.targets[tp] if target is None else target
        return all(self.replica_ok(target, j, size) for j in self.new_at[tp])

    def fits(self, item: Item, b: int) -> bool:
        """With ``item`` given to ``b``, every new replica of its partition keeps the rule (a swap keeps
        counts but changes who holds the partition's other replicas, hence who could take each)."""
        if self.idle:
            return True
        tp, i, size = item
        target = list(self.targets[tp])
        target[i] = b
        return self.holds(tp, size, target)


def _groups(placer: Placer, brokers: Iterable[int]) -> dict[str, list[int]]:
    """Brokers by rack; brokers without a rack form one group (``"\\0"``)."""
    out: dict[str, list[int]] = {}
    for b in sorted(brokers):
        r = rack_of(placer.racks, b)
        out.setdefault("\0" if r.startswith("\0") else r, []).append(b)
    return out


def repair_bytes(placer: Placer, targets: dict[TopicPartition, list[int]], received: NewReplicas) -> None:
    """Even out bytes within each rack by choosing which receiver takes which new replica.

    Counts stay as they are and so does the movement: only where the new replicas go changes,
    within the rack they are in. Bytes brokers kept are never touched: their spread is what
    least movement cannot change. ``targets`` and ``received`` are updated in place (each
    broker's list ends sorted by size; the item tuples themselves are reused: at 1M partitions
    there are 300k of them), and the placer's byte loads with them.
    """
    rule = _Rule(placer, targets, received)
    whole = _groups(placer, placer.candidates)
    for key, members in _groups(placer, received).items():
        if not _deal(placer, targets, received, members, whole.get(key, members), rule):
            for b in members:
                received[b].sort(key=_size)
        _swap(placer, targets, received, members, rule)


def _deal(placer: Placer, targets: dict[TopicPartition, list[int]], received: NewReplicas,
          members: list[int], rack: list[int], rule: _Rule) -> bool:
    """Deal the new replicas of ``members`` (one rack's receivers) again: largest first, each to the
    receiver with the largest byte deficit per slot left. Kept (True: ``received`` then lists
    each member's by size) only when every rule holds and the byte spread over ``rack`` (all its
    live brokers) does not widen."""
    loads = placer.loads.bytes
    if len(members) < 2 or relative_spread(loads.get(b, 0) for b in members) <= DEAL_ABOVE:
        return False                # the swaps alone finish what is already this even
    items = [it for b in members for it in received[b]]
    if len(items) < 2:
        return False
    items.sort(key=_size, reverse=True)     # stable: equal sizes keep the placement's order
    holders = [targets[tp][i] for tp, i, _s in items]
    assigned = {b: loads.get(b, 0) - sum(map(_size, received[b])) for b in members}    # kept bytes
    level = (sum(assigned.values()) + sum(map(_size, items))) / len(members)
    left = {b: len(received[b]) for b in members}
    need = {b: level - assigned[b] for b in members}
    heap = [(-need[b] / left[b], b) for b in members if left[b]]
    heapq.heapify(heap)
    limits = placer.limits
    dealt: dict[int, list[Item]] = {b: [] for b in members}
    ok = True
    for it in items:
        tp, i, size = it
        t = targets[tp]
        b = heap[0][1]
        if (t[i] == b or b not in t) and (not limits or b not in limits or assigned[b] + size <= limits[b]):
            top = True
        else:                       # the neediest cannot take it: the next neediest that can
            top = False
            aside = [heapq.heappop(heap)]
            while heap:
                b = heap[0][1]
                if (t[i] == b or b not in t) and (b not in limits or assigned[b] + size <= limits[b]):
                    break
                aside.append(heapq.heappop(heap))
            else:
                ok = False
            if ok:
                heapq.heappop(heap)
            for entry in aside:
                heapq.heappush(heap, entry)
            if not ok:
                break
        t[i] = b
        dealt[b].append(it)
        assigned[b] += size
        need[b] -= size
        left[b] -= 1
        if left[b]:
            entry = (-need[b] / left[b], b)
            if top:
                heapq.heapreplace(heap, entry)
            else:
                heapq.heappush(heap, entry)
        elif top:
            heapq.heappop(heap)
    old = [loads.get(b, 0) for b in rack]
    if ok:
        new = [assigned.get(b, loads.get(b, 0)) for b in rack]
        ok = max(new) - min(new) <= max(old) - min(old)
    if ok:
        shift = {b: assigned[b] - loads.get(b, 0) for b in members}
        for b in members:
            placer.charge_bytes(b, shift[b])
        if not rule.idle and not all(rule.holds(tp, size) for (tp, i, size), was in zip(items, holders)
                                     if targets[tp][i] != was):
            for b in members:
                placer.charge_bytes(b, -shift[b])
            ok = False
    if not ok:
        for (tp, i, _s), b in zip(items, holders):
            targets[tp][i] = b
        return False
    for b in members:
        dealt[b].reverse()          # dealt largest first: ascending again
        received[b] = dealt[b]
    return True


def _swap(placer: Placer, targets: dict[TopicPartition, list[int]], got: NewReplicas,
          members: list[int], rule: _Rule) -> None:
    """The heaviest receiver trades one new replica for a smaller one a lighter receiver got, the
    pair whose difference is nearest half their gap (both end between them: the rack's sum of
    squared bytes drops, and its spread cannot widen), lightest first; a heaviest that can trade
    with none is left as it is and the next heaviest tried. ``got``'s lists are sorted by size
    and stay so."""
    loads = placer.loads.bytes
    close = SWAP_STOP * sum(loads.get(b, 0) for b in members) / len(members)
    sizes: dict[int, list[int]] = {}
    active = list(members)
    for _round in range(SWAP_ROUNDS_PER_BROKER * len(members)):
        by_bytes = sorted(active, key=lambda b: (loads.get(b, 0), b))
        if len(by_bytes) < 2:
            return
        heavy = by_bytes[-1]
        if loads.get(heavy, 0) - loads.get(by_bytes[0], 0) <= close:
            return                  # already as even as a swap is worth
        swap = None
        for light in by_bytes[:-1]:
            gap = loads.get(heavy, 0) - loads.get(light, 0)
            limit = placer.limits.get(light)
            room = gap if limit is None else limit - loads.get(light, 0)   # light's disk headroom
            if gap <= 0 or room <= 0:
                continue
            if light not in sizes:
                sizes[light] = list(map(_size, got[light]))
            swap = _best_swap(targets, got[heavy], got[light], sizes[light], heavy, light, gap, room, rule.fits)
            if swap is not None:
                break
        if swap is None:
            active.remove(heavy)
            continue
        one, two = swap
        (tp1, i1, s1), (tp2, i2, s2) = one, two
        targets[tp1][i1], targets[tp2][i2] = light, heavy
        for b, out, into in ((heavy, one, two), (light, two, one)):
            if b not in sizes:
                sizes[b] = list(map(_size, got[b]))
            k = bisect.bisect_left(sizes[b], out[2])
            while got[b][k] is not out:
                k += 1
            del got[b][k], sizes[b][k]
            k = bisect.bisect_left(sizes[b], into[2])
            got[b].insert(k, into)
            sizes[b].insert(k, into[2])
        placer.charge_bytes(heavy, s2 - s1)
        placer.charge_bytes(light, s1 - s2)


def _best_swap(targets: dict[TopicPartition, list[int]], heavy_got: list[Item], light_got: list[Item],
               sizes: list[int], heavy: int, light: int, gap: int, room: float,
               fits: Callable[[Item, int], bool]) -> tuple[Item, Item] | None:
    """The (heavy's, light's) pair of received replicas whose size difference is in (0, gap),
    at most ``room`` (the light broker's disk headroom) and nearest gap / 2, each allowed on its
    new broker by ``fits``, or None. Both lists are sorted by size (``sizes``: the light side's);
    the heavy side is read from its largest down and the search stops at a difference within
    gap / 64 of the ideal, when no smaller replica can beat the best found, or at one no larger
    than the light side's smallest."""
    best, best_err = None, None
    if not sizes:
        return None
    for one in reversed(heavy_got):
        tp1, s1 = one[0], one[2]
        if s1 <= sizes[0]:
            break                   # no smaller replica of light's to trade for
        if best_err is not None and gap / 2 - (s1 - sizes[0]) >= best_err:
            break                   # smaller replicas cannot come nearer to gap / 2
        if light in targets[tp1]:
            continue
        j = bisect.bisect_left(sizes, s1 - gap / 2)
        for jj in (j - 1, j):
            if not 0 <= jj < len(sizes):
                continue
            d = s1 - sizes[jj]
            two = light_got[jj]
            if not 0 < d < gap or d > room or heavy in targets[two[0]]:
                continue
            if not (fits(one, light) and fits(two, heavy)):
                continue
            err = abs(d - gap / 2)
            if best_err is None or err < best_err:
                best, best_err = (one, two), err
        if best_err is not None and best_err * 64 <= gap:
            break
    return best


def bytes_notes(placer: Placer, received: NewReplicas, target: float = BYTES_TARGET) -> list[str]:
    """One note per rack (brokers without racks: one group) whose bytes spread ends above ``target``,
    saying why: the floor least movement leaves (the kept replicas, with the rack's new replicas
    poured into the lightest brokers as if divisible), or, where that floor is under ``target``,
    the fixed count of new replicas per broker and their sizes."""
    loads = placer.loads.bytes
    notes = []
    for key, brokers in _groups(placer, placer.candidates).items():
        now = relative_spread(loads.get(b, 0) for b in brokers)
        if now <= target or len(brokers) < 2:
            continue
        new = {b: [size for _tp, _i, size in received.get(b, ())] for b in brokers}
        kept = sorted((loads.get(b, 0) - sum(new[b]), b) for b in brokers)
        pool = sum(sum(v) for v in new.values())
        count = sum(len(v) for v in new.values())
        mean = sum(loads.get(b, 0) for b in brokers) / len(brokers)
        level, rest = kept[0][0], pool
        for k in range(1, len(kept) + 1):       # water-fill the kept bytes with the rack's new bytes
            top = kept[k][0] if k < len(kept) else float("inf")
            if rest <= (top - level) * k:
                level += rest / k
                break
            rest -= (top - level) * k
            level = top
        heaviest, hb = kept[-1]
        floor = max(0.0, (heaviest - level) / mean) if mean else 0.0
        where = "brokers without a rack" if key == "\0" else f"rack {key}"
        if not count:
            why = "no new replica goes there: least movement leaves its brokers' bytes as they are"
        elif floor > target:
            why = (f"least movement allows no less than {floor:.1%}: the replicas broker {hb} keeps hold "
                   f"{bytes_text(heaviest)}, and the {count} new replica(s) placed in the rack "
                   f"({bytes_text(pool)}) lift the others to {bytes_text(int(level))} at most")
        else:
            largest = max(max(v) for v in new.values() if v)
            why = (f"each broker takes the number of new replicas the replica-count balance gives it, and no "
                   f"dealing of the rack's {count} new replica(s) (largest {bytes_text(largest)}) found evens "
                   f"them closer (least movement alone would allow {floor:.1%})")
        notes.append(f"bytes spread within {where} is {now:.1%}, above {target:.0%}: {why}")
    return notes
