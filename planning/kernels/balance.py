"""The balancing engine of rebalance and add-brokers: counts first, then bytes, then leaders.

Objectives, in order (an earlier one is never traded for a later one):

1. **rack safety**: a replica never lands where its partition would span fewer racks than now;
2. **replica counts**: spread (max − min) over the *members* (the brokers that hold data after
   the plan) down to the target, with the fewest replica moves: each step moves one replica
   from the broker with the most replicas to the one with the fewest that can take it (two or
   more apart), so every move removes one replica of excess (the count minimum when nothing
   binds); the step spends the most balance per move, so a replica budget that binds buys the
   most count balance first;
3. **preferred leaders**: evened by re-ordering replica lists (:mod:`planning.kernels.leaders`),
   moved partitions first, others (an in-sync replica only) where the moved ones cannot;
4. **bytes**: (max − min) / mean over the members. Each count move picks, on its source, the
   replica whose size keeps both brokers on course for the mean bytes over the replicas they
   still give or take; then *compound moves* go on where no single move can help: swaps of a
   larger replica of a heavier broker with a smaller one of a lighter broker (both end between
   their old bytes, counts unchanged), free ones first (re-targeting replicas the plan moves
   anyway, or a source giving a different replica: no extra copy), then, for rebalance and only
   while the bytes target is not met, paid ones (one or two extra copies each, counted in the
   report), and one-way hand-overs from a heavier broker holding one replica more to a lighter
   one holding one fewer (counts stay within one). And a *two-step chain* during the count
   moves: a broker short of replicas that cannot take one without widening the bytes spread
   first trades a large replica for a smaller one (counts kept), then takes its share.

Never worse at the end: counts only narrow (a move goes from a broker two or more above its
destination); no count move lets the bytes spread (max − min) pass the one at the start, and
swaps end both brokers between their old bytes; no broker's preferred-leader count leaves the
range the members started in. So no spread ends wider than it began.
A rebalance moves at most one replica a partition (``one_move_per_partition``: each move costs one
copy of that partition, so the budget is read per partition); add-brokers may move several of one
partition onto the new brokers. A replica never lands on a broker the partition is leaving, so
the new copies counted are exactly the plan's. Partitions being
reassigned, or with a replica outside the members, are left alone but their load counts.

Failure: none here (the callers refuse bad input); a step that finds nothing stops its phase.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from planning.model import Move
from planning.kernels.leaders import even_leaders
from planning.kernels.loads import rack_of

#: destinations tried per source in the count phase (least loaded first)
CANDIDATES = 6
#: replicas of a source examined per (source, destination), nearest the ideal size first
SCAN = 64
#: replicas of the heavier broker examined per swap search, largest first
SWAP_SCAN = 32
#: replicas of the lighter broker examined each side of the ideal size per replica of the heavier
#: one, until one the rules allow (racks, a partition's second replica, the leadership range)
Y_SCAN = 16
#: partners tried for the heaviest (lightest) broker per bytes step
PARTNERS = 2
#: bytes steps at most, per member broker (each strictly lowers the sum of squared bytes)
STEPS_PER_BROKER = 8
#: default allowance of paid replica moves for bytes: this share of the count moves (or one per member)
EXTRA_SHARE_PERCENT = 2
#: a paid swap must narrow the pair by this share of the mean bytes per extra copy
PAID_GAIN = 0.01

Entry = tuple[int, TopicPartition, int]       # (size, tp, index in the replica list)


@dataclass(frozen=True)
class Limits:
    """What the engine may spend and where it stops (``None``: no cap)."""

    max_replicas: int | None = None
    max_bytes: int | None = None
    replica_spread: int = 1
    bytes_relative_spread: float = 0.10
    leader_spread: int = 1
    paid_bytes_moves: bool = True      # extra copies for bytes balance (rebalance); add-brokers: free only
    one_move_per_partition: bool = True   # rebalance: a budget counted per partition; add-brokers: any slot
    dst_first: bool = False    # count moves: fill the least loaded destination first (else empty the fullest source)
    extra_moves: int | None = None     # paid allowance; None: EXTRA_SHARE_PERCENT of the count moves


@dataclass(frozen=True)
class Balanced:
    """What the engine did: the moves, what they cost, why each phase stopped."""

    moves: tuple[Move, ...]
    replicas_moved: int
    bytes_moved: int
    count_moves: int
    extra_moves: int
    leader_changes: int
    stopped_by: str


class Ledger:
    """Loads over the members and the replica slots the engine may move, with their sizes."""

    def __init__(self, snapshot: ClusterSnapshot, members: Collection[int],
                 sizes: Mapping[TopicPartition, int] | None, racks: Mapping[int, str],
                 ranks: Mapping[int, int]) -> None:
        self.members = sorted(set(members))
        member_set = set(self.members)
        self.racks = racks
        self.ranks = ranks
        self.replicas = {b: 0 for b in self.members}
        self.bytes = {b: 0 for b in self.members}
        self.leaders = {b: 0 for b in self.members}
        self.targets: dict[TopicPartition, list[int]] = {}
        self.current: dict[TopicPartition, tuple[int, ...]] = {}
        self.size: dict[TopicPartition, int] = {}
        self.leader_of: dict[TopicPartition, int | None] = {}
        self.isr: dict[TopicPartition, frozenset[int]] = {}
        self.rack_count: dict[TopicPartition, int] = {}
        self.hosted: dict[int, list[Entry]] = {b: [] for b in self.members}
        self.received: dict[int, list[Entry]] = {b: [] for b in self.members}
        self.moved: dict[TopicPartition, set[int]] = {}     # tp → indexes of its moved slots
        self.one_move_per_partition = True
        self.replicas_moved = 0
        self.bytes_moved = 0
        rack_key = {b: rack_of(racks, b) for b in member_set}
        for p in snapshot.partitions():
            tp = p.tp
            reps = p.replicas
            size = int(sizes.get(tp, 0)) if sizes else 0
            for b in reps:
                if b in member_set:
                    self.replicas[b] += 1
                    self.bytes[b] += size
            if reps and reps[0] in member_set:
                self.leaders[reps[0]] += 1
            if p.is_reassigning or not reps or not member_set.issuperset(reps):
                continue
            self.targets[tp] = list(reps)
            self.current[tp] = reps
            self.size[tp] = size
            self.leader_of[tp] = p.leader
            self.isr[tp] = frozenset(p.isr)
            self.rack_count[tp] = len({rack_key[b] for b in reps})
            for i, b in enumerate(reps):
                self.hosted[b].append((size, tp, i))
        for b in self.hosted:
            self.hosted[b].sort()
        everyone = set(member_set).union(*(self.current.values())) if self.current else set(member_set)
        self.rack = {b: rack_of(racks, b) for b in everyone}

    # -- measures ------------------------------------------------------------------------------
    def mean_bytes(self) -> float:
        return sum(self.bytes.values()) / len(self.members)

    def bytes_relative(self) -> float:
        mean = self.mean_bytes()
        return (max(self.bytes.values()) - min(self.bytes.values())) / mean if mean else 0.0

    def count_spread(self) -> int:
        return max(self.replicas.values()) - min(self.replicas.values())

    # -- slots ---------------------------------------------------------------------------------
    def origin(self, tp: TopicPartition, i: int) -> int:
        return self.current[tp][i]

    def can_take(self, tp: TopicPartition, i: int, dst: int) -> bool:
        """Whether slot ``i`` of ``tp`` may go to ``dst``: not a replica already, racks kept."""
        reps = self.targets[tp]
        if dst in reps or (dst in self.current[tp] and dst != self.current[tp][i]):
            return False
        rack = self.rack
        if rack[dst] == rack[reps[i]]:
            return True
        spanned = {rack[b] for j, b in enumerate(reps) if j != i}
        spanned.add(rack[dst])
        return len(spanned) >= self.rack_count[tp]

    def cost(self, tp: TopicPartition, i: int, dst: int) -> int:
        """Change in new replicas when slot ``i`` of ``tp`` goes to ``dst``."""
        home = self.current[tp][i]
        return (dst != home) - (self.targets[tp][i] != home)

    def relocate(self, tp: TopicPartition, i: int, dst: int) -> None:
        """Slot ``i`` of ``tp`` goes to ``dst``; loads, lists and what the plan moves follow."""
        src = self.targets[tp][i]
        size = self.size[tp]
        home = self.current[tp][i]
        slots = self.moved.setdefault(tp, set())
        if src == home:
            if self.one_move_per_partition and not slots:   # none of its slots is a source again
                for j, b in enumerate(self.current[tp]):
                    _remove(self.hosted[b], (size, tp, j))
            else:
                _remove(self.hosted[src], (size, tp, i))
            slots.add(i)
        else:
            _remove(self.received[src], (size, tp, i))
        if dst != home:
            bisect.insort(self.received[dst], (size, tp, i))
        else:                                   # back home
            slots.discard(i)
            if self.one_move_per_partition and not slots:
                for j, b in enumerate(self.current[tp]):
                    if j != i:
                        bisect.insort(self.hosted[b], (size, tp, j))
            bisect.insort(self.hosted[dst], (size, tp, i))
        if not slots:
            del self.moved[tp]
        delta = (dst != home) - (src != home)
        self.replicas_moved += delta
        self.bytes_moved += delta * size
        self.targets[tp][i] = dst
        self.replicas[src] -= 1
        self.replicas[dst] += 1
        self.bytes[src] -= size
        self.bytes[dst] += size
        if i == 0:
            self.leaders[src] -= 1
            self.leaders[dst] += 1

    def moves(self) -> list[Move]:
        return [Move(tp, self.current[tp], tuple(reps), self.size[tp], self.leader_of[tp])
                for tp, reps in self.targets.items() if tuple(reps) != self.current[tp]]


def _remove(entries: list[Entry], entry: Entry) -> None:
    k = bisect.bisect_left(entries, entry)
    if k < len(entries) and entries[k] == entry:
        entries.pop(k)


def balance(led: Ledger, receivers: Iterable[int], limits: Limits, sized: bool) -> Balanced:
    """Run the three phases on ``led`` (changed in place); moves land only on ``receivers``
    (or back where a replica came from)."""
    receivers = sorted(set(receivers) & set(led.members))
    led.one_move_per_partition = limits.one_move_per_partition
    stopped = _count_phase(led, receivers, limits, sized)
    count_moves = led.replicas_moved
    if sized and stopped in ("", "target reached"):
        stopped = _bytes_phase(led, set(receivers), limits, count_moves) or stopped
    extra = led.replicas_moved - count_moves
    moved = set(led.moved)

    def allowed(tp: TopicPartition) -> list[int]:
        reps = led.targets[tp]
        return list(reps) if tp in moved else [b for b in reps if b in led.isr[tp]]

    changed = even_leaders(led.targets, led.leaders, led.members, allowed, led.ranks,
                           first=sorted(moved), spread=limits.leader_spread)
    return Balanced(tuple(led.moves()), led.replicas_moved, led.bytes_moved, count_moves, extra,
                    len(changed), stopped or "target reached")


# -- phase 1: replica counts -------------------------------------------------------------------

def _count_phase(led: Ledger, receivers: list[int], limits: Limits, sized: bool) -> str:
    ranks = led.ranks
    racks_ = led.rack
    n = len(led.members)
    # at the start: the bytes spread no move may pass, the leadership range no broker may leave
    spread_b = max(led.bytes.values()) - min(led.bytes.values())
    lo_l, hi_l = min(led.leaders.values()), max(led.leaders.values())
    total = sum(led.replicas.values())
    floor_share, ceil_share = total // n, -(-total // n)
    mean_b = led.mean_bytes()
    chains = 0
    for _step in range(total + 1):
        if led.count_spread() <= limits.replica_spread:
            return "target reached"
        if limits.max_replicas is not None and led.replicas_moved >= limits.max_replicas:
            return "replica budget spent"
        lo_now, hi_now = min(led.bytes.values()), max(led.bytes.values())
        dsts = sorted(receivers, key=lambda b: (led.replicas[b], led.bytes[b], ranks[b]))
        if not dsts:
            return "no broker may receive"
        by_rack: dict[str, list[int]] = {}
        for b in dsts:
            by_rack.setdefault(racks_[b], []).append(b)
        floor_dst = led.replicas[dsts[0]]
        sources = sorted(led.members, key=lambda b: (-led.replicas[b], -led.bytes[b], ranks[b]))
        # a move is on the way to the count minimum when its source is above its final share and its
        # destination below: r brokers may end with ceil_share, the others with floor_share
        above = sum(1 for b in led.members if led.replicas[b] > floor_share)
        extra_slots = total - n * floor_share

        def needed(src: int, dst: int) -> bool:
            cs, cd = led.replicas[src], led.replicas[dst]
            return ((cs > ceil_share or (cs == ceil_share > floor_share and above > extra_slots))
                    and (cd < floor_share or (cd == floor_share and above < extra_slots)))

        pick = None
        for strict in (True, False):
            for src, dst in _pairs(sources, dsts, by_rack, racks_, floor_dst, limits.dst_first):
                if led.replicas[src] - led.replicas[dst] < 2 or (strict and not needed(src, dst)):
                    continue
                give = (led.bytes[src] - mean_b) / max(1, led.replicas[src] - floor_share)
                take = (mean_b - led.bytes[dst]) / max(1, ceil_share - led.replicas[dst])
                ideal = max(0.0, (give + take) / 2) if sized else 0.0
                cap = None
                if sized:      # the bytes spread (max − min) never passes the one at the start
                    bs, bd = led.bytes[src], led.bytes[dst]
                    cap = min(lo_now + spread_b - bd, bs - (hi_now - spread_b), (spread_b - bd + bs) // 2)
                if limits.max_bytes is not None:
                    left = limits.max_bytes - led.bytes_moved
                    cap = left if cap is None else min(cap, left)
                if cap is not None:
                    ideal = min(ideal, cap)
                lead_ok = led.leaders[src] - 1 >= lo_l and led.leaders[dst] + 1 <= hi_l
                pick = _nearest_slot(led, src, dst, ideal, cap, lead_ok)
                if pick is not None:
                    break
            if pick is not None:
                break
        if pick is None and sized and chains < len(led.members):
            # two-step chain: a broker short of replicas that cannot take one without passing the
            # starting bytes maximum first trades a large replica for a smaller one (counts kept)
            chains += 1
            room = _make_room(led, dsts[:CANDIDATES], receivers, limits)
            if room is not None:
                for tp, i, dst in room:
                    led.relocate(tp, i, dst)
                continue
        if pick is None:
            return ("byte budget spent" if limits.max_bytes is not None else "no move narrows the replica spread "
                    "(racks, or keeping every broker's bytes and leaderships within their starting range, allow none)")
        tp, i, dst = pick
        led.relocate(tp, i, dst)
    return "target reached"


def _pairs(sources: list[int], dsts: list[int], by_rack: Mapping[str, list[int]], rack: Mapping[int, str],
           floor_dst: int, dst_first: bool):
    """(source, destination) candidates: each source from the most loaded down with the least loaded
    destinations (its rack's first), or with ``dst_first`` each destination from the least loaded up
    with every source from the most loaded down."""
    if dst_first:
        for dst in dsts:
            for src in sources:
                if src != dst:
                    yield src, dst
        return
    for src in sources:
        if not dsts or src not in rack:
            continue
        for dst in dict.fromkeys(by_rack.get(rack[src], [])[:CANDIDATES] + dsts[:CANDIDATES]):
            yield src, dst


def _make_room(led: Ledger, short: list[int], receivers: list[int],
               limits: Limits) -> list[tuple[TopicPartition, int, int]] | None:
    """A swap that lowers the bytes of one of the ``short`` brokers (fewest replicas), so it can
    take a replica next; paid (at most two copies) only where the budget allows."""
    extra = 2 if limits.max_replicas is None else min(2, limits.max_replicas - led.replicas_moved)
    if extra <= 0:
        return None
    mean = led.mean_bytes()
    for a in sorted(short, key=lambda b: -led.bytes[b]):
        partners = sorted((b for b in led.members if led.bytes[b] < led.bytes[a] and led.rack[b] == led.rack[a]),
                          key=lambda b: led.bytes[b])[:PARTNERS]
        partners += sorted((b for b in led.members if led.bytes[b] < led.bytes[a]),
                           key=lambda b: led.bytes[b])[:1]
        for b in dict.fromkeys(partners):
            found = _best_exchange(led, a, b, set(receivers), limits, extra, mean, swaps_only=True)
            if found is not None:
                return found
    return None


def _nearest_slot(led: Ledger, src: int, dst: int, ideal: float, cap: float | None,
                  lead_ok: bool) -> tuple[TopicPartition, int, int] | None:
    """The replica of ``src`` nearest ``ideal`` bytes that ``dst`` may take (within ``cap``)."""
    entries = led.hosted[src]
    hi = bisect.bisect_left(entries, (ideal,))
    lo = hi - 1
    for _ in range(SCAN):
        if hi < len(entries) and (lo < 0 or entries[hi][0] - ideal < ideal - entries[lo][0]):
            k = hi
            hi += 1
        elif lo >= 0:
            k = lo
            lo -= 1
        else:
            return None
        size, tp, i = entries[k]
        if cap is not None and size > cap:
            continue
        if i == 0 and not lead_ok:
            continue
        if led.can_take(tp, i, dst):
            return tp, i, dst
    return None


# -- phase 2: bytes ----------------------------------------------------------------------------

def _bytes_phase(led: Ledger, receivers: set[int], limits: Limits, count_moves: int) -> str:
    """Compound moves until the bytes target is met or nothing narrows the bytes spread."""
    members = led.members
    allowance = limits.extra_moves if limits.extra_moves is not None else \
        max(len(members), -(-EXTRA_SHARE_PERCENT * count_moves // 100))
    mean = led.mean_bytes()
    same_rack: dict[str, list[int]] = {}
    for b in members:
        same_rack.setdefault(led.rack[b], []).append(b)
    for _step in range(STEPS_PER_BROKER * len(members)):
        if led.bytes_relative() <= limits.bytes_relative_spread:
            return ""
        extra_left = allowance - (led.replicas_moved - count_moves) if limits.paid_bytes_moves else 0
        if limits.max_replicas is not None:
            extra_left = min(extra_left, limits.max_replicas - led.replicas_moved)
        order = sorted(members, key=lambda b: (led.bytes[b], led.ranks[b]))
        heavy, light = order[-1], order[0]
        pairs = [(heavy, b) for b in _partners(led, heavy, same_rack, lighter=True)]
        pairs += [(a, light) for a in _partners(led, light, same_rack, lighter=False)]
        pairs += [(heavy, b) for b in _donors(led, heavy)]
        found = None
        for a, b in dict.fromkeys(pairs):
            found = _best_exchange(led, a, b, receivers, limits, extra_left, mean)
            if found is not None:
                break
        if found is None:        # the spread is stuck at a broker we cannot trade with: still bring the
            found = _unload_a_receiver(led, receivers, limits, extra_left, mean, same_rack)   # receivers in
        if found is None:
            return "no swap or hand-over narrows the bytes spread further" + (
                "" if extra_left > 0 or not limits.paid_bytes_moves else
                f" within {allowance} replica move(s) beyond the count moves")
        for tp, i, dst in found:
            led.relocate(tp, i, dst)
    return ""


def _unload_a_receiver(led: Ledger, receivers: set[int], limits: Limits, extra_left: int, mean: float,
                       same_rack: Mapping[str, list[int]]) -> list[tuple[TopicPartition, int, int]] | None:
    """An exchange that brings the heaviest receiver above half the target's share nearer the mean,
    when the spread itself is held by a broker nothing can trade with (an old broker holding the
    largest partitions): the receivers' bytes are the plan's to set. Both brokers of an exchange end
    between where they were, so the sum of squared bytes still falls and the phase still ends."""
    over = sorted((b for b in receivers if led.bytes[b] > mean * (1 + limits.bytes_relative_spread / 2)),
                  key=lambda b: (-led.bytes[b], b))
    for heavy in over:
        for b in dict.fromkeys(_partners(led, heavy, same_rack, lighter=True) + _donors(led, heavy)):
            found = _best_exchange(led, heavy, b, receivers, limits, extra_left, mean)
            if found is not None:
                return found
    return None


def _donors(led: Ledger, b: int) -> list[int]:
    """The brokers lighter than ``b`` that gave it a replica it received, lightest first: ``b`` can
    hand a replica back only to where it came from, and when the lightest brokers gave it only small
    ones, a middle one that gave it a large one is the trade that narrows the spread."""
    key = led.bytes
    homes = {led.current[tp][i] for _size, tp, i in led.received[b]}
    return sorted((x for x in homes if x in key and key[x] < key[b]), key=lambda x: (key[x], x))


def _partners(led: Ledger, b: int, same_rack: Mapping[str, list[int]], lighter: bool) -> list[int]:
    """Brokers to exchange with ``b``: the lightest (heaviest) of its rack, then of all."""
    key = led.bytes
    pool = [x for x in same_rack[led.rack[b]] if (key[x] < key[b] if lighter else key[x] > key[b])]
    pool.sort(key=lambda x: key[x], reverse=not lighter)
    rest = sorted((x for x in led.members if (key[x] < key[b] if lighter else key[x] > key[b])),
                  key=lambda x: key[x], reverse=not lighter)
    return pool[:PARTNERS] + rest[:1]


def _best_exchange(led: Ledger, a: int, b: int, receivers: set[int], limits: Limits, extra_left: int,
                   mean: float, swaps_only: bool = False) -> list[tuple[TopicPartition, int, int]] | None:
    """Slots whose exchange between heavier ``a`` and lighter ``b`` brings both nearest the middle:
    a swap (a larger replica of ``a`` for a smaller one of ``b``) or, when ``a`` holds a replica
    more than ``b``, a hand-over of one. Free ones first; a paid one (at most ``extra_left`` new
    copies) only when it narrows the pair by at least :data:`PAID_GAIN` of the mean per copy.
    For each replica of ``a`` (largest first), the replicas of ``b`` tried are the nearest the middle
    on each side that the rules allow (up to :data:`Y_SCAN` a side: the nearest may be refused by the
    racks, a shared partition or the leadership range, and a refused one must not hide the next).
    The search stops at the first free exchange within a quarter of the gap from the middle."""
    gap = led.bytes[a] - led.bytes[b]
    lo_l, hi_l = min(led.leaders.values()), max(led.leaders.values())
    budget_b = None if limits.max_bytes is None else limits.max_bytes - led.bytes_moved
    reach_a, reach_b = a in receivers, b in receivers
    current, size = led.current, led.size
    best = None   # ((cost, error), slots)
    lead_a, lead_b = led.leaders[a], led.leaders[b]

    def consider(slots: list[tuple[TopicPartition, int, int]], cost: int, d: int) -> bool | None:
        """Keep ``slots`` if the best so far: True; refused by the leadership range: False; by
        what it costs (copies, gain per copy, bytes budget): None."""
        nonlocal best
        cost = max(0, cost)
        if cost > extra_left or (cost and d < PAID_GAIN * mean * cost):
            return None
        if budget_b is not None and sum(size[tp] * led.cost(tp, i, dst) for tp, i, dst in slots) > budget_b:
            return None
        lead = sum((1 if dst == b else -1) for tp, i, dst in slots if i == 0)   # b's leaderships gained
        if lead and not (lo_l <= lead_a - lead <= hi_l and lo_l <= lead_b + lead <= hi_l):
            return False
        key = (cost, abs(d - gap / 2))
        if best is None or key < best[0]:
            best = (key, slots)
        return True

    def swap(sx: int, tpx: TopicPartition, ix: int, cx: int, y: Entry, y_hosted: bool) -> bool | None:
        """Consider trading x for ``y``: True if allowed; False if refused for ``y`` itself (its
        partition, racks, home, leadership): the next one may do; None if out of (0, gap) of x or
        refused for its cost, and the next ones are no better."""
        sy, tpy, iy = y
        d = sx - sy
        if not 0 < d < gap:
            return None
        if tpy == tpx:
            return False
        home_y = current[tpy][iy]
        cy = 1 if y_hosted else (-1 if home_y == a else 0)
        if cx + cy > extra_left:
            return None if y_hosted else False
        if not (reach_a or home_y == a) or not led.can_take(tpy, iy, a):
            return False
        return consider([(tpx, ix, b), (tpy, iy, a)], cx + cy, d)

    ys_all = [(ys, kind) for ys, kind in ((led.received[b], 0), (led.hosted[b], 1)) if ys]
    if extra_left <= 0:     # free only: b's own replicas go to a only where a gave b one (cost −1 + 1)
        ys_all = [(ys, kind) for ys, kind in ys_all if kind == 0] + [(ys, kind) for ys, kind in ys_all if kind == 1]
    max_y = max((ys[-1][0] for ys, _ in ys_all), default=0)
    min_y = min((ys[0][0] for ys, _ in ys_all), default=0)
    one_way = led.replicas[a] > led.replicas[b] and not swaps_only
    for xs, x_hosted in ((led.received[a], False), (led.hosted[a], True)):
        k = bisect.bisect_left(xs, (max_y + gap,)) - 1
        for _ in range(SWAP_SCAN):
            if k < 0:
                break
            sx, tpx, ix = xs[k]
            k -= 1
            if sx <= 0:
                break
            if best is not None and sx - min_y < gap / 2 - best[0][1]:
                break                      # smaller replicas of a cannot come nearer the middle
            home_x = current[tpx][ix]
            cx = 1 if x_hosted else (-1 if home_x == b else 0)
            if cx > extra_left + 1 or not (reach_b or home_x == b) or not led.can_take(tpx, ix, b):
                continue
            if one_way and sx < gap:
                consider([(tpx, ix, b)], cx, sx)
            for ys, y_hosted in ys_all:
                if y_hosted and (not reach_a or cx + 1 > extra_left):
                    continue                  # b's own replicas go only to a receiver, each a new copy
                # the replicas of b nearest the middle, one each side of it: the nearest the rules
                # allow (those nearer may share a partition with a's, or break the racks or leaders)
                j = bisect.bisect_left(ys, (sx - gap // 2,))
                for side in (range(j - 1, max(-1, j - 1 - Y_SCAN), -1), range(j, min(len(ys), j + Y_SCAN))):
                    for jj in side:
                        allowed = swap(sx, tpx, ix, cx, ys[jj], y_hosted)
                        if allowed is not False:
                            break
            if best is not None and best[0][0] == 0 and best[0][1] * 4 <= gap:
                return best[1]
    return None if best is None else best[1]


def bytes_note(led: Ledger, target: float) -> str | None:
    """Why the bytes spread is above ``target`` after the plan, for the report (None: it is not)."""
    now = led.bytes_relative()
    if now <= target or not led.size:
        return None
    floor, tp = bytes_floor(led)
    mean = led.mean_bytes()
    share = led.size[tp] / mean if mean else 0.0   # type: ignore[index]
    return (f"bytes spread {now:.1%} is above the {target:.0%} target: the largest partition, {tp}, is "
            f"{led.size[tp]} bytes, {share:.0%} of a broker's mean bytes (no plan with even counts ends below "  # type: ignore[index]
            f"{floor:.1%}); the brokers holding the largest partitions stay heavy unless most of their other "
            "replicas are traded for smaller ones, more moves than the count minimum and the allowance beyond it")


def bytes_floor(led: Ledger) -> tuple[float, TopicPartition | None]:
    """A floor under the bytes spread with even counts: the broker holding the largest partition
    holds at least its share of replicas, the others no smaller than the smallest partition."""
    if not led.size:
        return 0.0, None
    mean = led.mean_bytes()
    tp = max(led.size, key=lambda t: (led.size[t], t))
    share = sum(led.replicas.values()) // len(led.members)
    high = led.size[tp] + max(0, share - 1) * min(led.size.values())
    return (max(0.0, (high - mean) / mean) if mean else 0.0), tp


def count_minimum(snapshot: ClusterSnapshot, members: Collection[int]) -> int:
    """The fewest replica moves that bring every member within one replica of the others (the most
    loaded keep the larger shares; racks ignored: a lower bound)."""
    members = sorted(members)
    counts: dict[int, int] = {b: 0 for b in members}
    for p in snapshot.partitions():
        for b in p.replicas:
            if b in counts:
                counts[b] += 1
    ordered = sorted(counts.values(), reverse=True)
    total, n = sum(ordered), len(ordered)
    shares = [total // n + (1 if i < total % n else 0) for i in range(n)]
    return sum(max(0, c - s) for c, s in zip(ordered, shares))
