"""Pack moves into waves: per-broker slots, byte budget, znode size, even per-broker bytes.

Model (the one the controller emulator and Kafka follow): new replicas fetch from the
partition's current leader, so a move of ``size`` bytes to ``d`` destinations puts
``size × d`` outbound bytes on the leader and ``size`` inbound bytes on each destination.
Throttles are per broker, so a wave lasts about ``max over brokers of max(in, out) / throttle``
(a wave ends when its slowest partition ends: the barrier). The physical lower bound of the
whole plan is ``max over brokers of total in or out bytes / throttle`` (which already covers the
largest partition ÷ throttle).

Limits (after Cruise Control's ExecutionTaskPlanner, counted where the bytes flow): a move
charges one slot on the broker it copies from (the partition's leader) and one on each
destination; a broker that only drops a replica does no replication I/O and is not charged (in
a decommission the removed brokers are demoted first, so they lead nothing). A wave holds at
most ``max_moves_per_broker`` slots per broker when a person sets that cap (by default there is
none), at most ``max_wave_bytes`` new-replica bytes, and its ``/admin/reassign_partitions`` payload
stays ≤ ``max_znode_bytes``. Without a cap the construction is
:mod:`planning.kernels.wave_uncapped`'s: as many waves as the bytes need, each a balanced slice
(every broker's bytes spread evenly over them), as long as its busiest broker's bytes at the
throttle; then the same search (what shaped them: :mod:`planning.kernels.wave_shape`).

Objective: the predicted total, ``sum over waves of (busiest broker's bytes ÷ throttle +
wave_overhead_s)``; the overhead (default 10 s: a progress poll, the controller's reassignment
steps, leader moves) keeps the packer from buying a sliver of copying time with many tiny waves.

Packing, in two steps:

1. Construct — moves by decreasing bytes, each into the wave whose busiest-broker bytes grow
   least (zero when it fits under the wave's current maximum), among the first ``WINDOW``
   waves that have a slot on every broker of the move. Until there are as many waves as the
   bound (the most of: the busiest broker's slot uses ÷ ``max_moves_per_broker``, the moves'
   payload ÷ one node's room, their bytes ÷ ``max_wave_bytes``), a move opens a new
   wave when joining would add more than the per-wave overhead: a large partition then gets a
   wave of its own, which later, smaller moves fill at no cost, instead of stretching a wave
   that was already waiting for another large partition on the same broker. After the slot
   bound, a new wave is opened only when nothing fits.
2. Improve — a local search that only ever lowers the objective
   (:mod:`planning.kernels.wave_search`). Deterministic throughout.

The limits and the packing items both steps share are in :mod:`planning.kernels.wave_items`.

Failure: :class:`PlanRefused` for a non-positive limit, or a single move whose entry alone
exceeds the znode budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Iterable, Sequence

from planning.model import Move, PlanRefused, Wave
# WaveLimits, ZNODE_WRAPPER, entry_bytes and move_loads are also this module's public names
from planning.kernels.wave_items import (ZNODE_WRAPPER, Item, OpenWave, WaveLimits, entry_bytes,  # noqa: F401
                                          move_loads)
from planning.kernels.wave_search import improve, search_budget
from planning.kernels.wave_uncapped import construct_uncapped

WINDOW = 32                     # feasible waves a move compares while packing
_NBYTES, _TP, _POS = attrgetter("nbytes"), attrgetter("tp"), attrgetter("pos")
#: from this many moves the bounds, loads, disk walk (planning.kernels.move_columns) and validation
#: (planning.kernels.validate_columns) work over numpy arrays; below it numpy's import costs more
COLUMNAR_MIN_MOVES = 20_000


def pack_waves(moves: Iterable[Move], limits: WaveLimits) -> list["Wave"]:
    """Waves for ``moves`` under ``limits`` (see the module docstring for the packing rule)."""
    limits.check()
    items = [Item(m) for m in moves]
    for it in items:
        if ZNODE_WRAPPER + it.zbytes > limits.max_znode_bytes:
            raise PlanRefused(f"{it.move.tp}: its reassignment entry ({it.zbytes} B) alone exceeds the "
                              f"znode budget {limits.max_znode_bytes} B; raise max_znode_bytes")
    in_tp_order = all(a.move.tp < b.move.tp for a, b in zip(items, items[1:]))
    if in_tp_order:
        for pos, it in enumerate(items):
            it.pos = pos                        # a wave's moves are put in (topic, partition) order by it
        items.sort(key=_NBYTES, reverse=True)   # stable: equal bytes stay in (topic, partition) order
    else:
        items.sort(key=lambda it: (-it.nbytes, it.move.tp))
    for rank, it in enumerate(items):
        it.rank = rank
    overhead = limits.overhead_bytes()
    waves = _construct(items, limits, overhead) if limits.max_moves_per_broker is not None else \
        construct_uncapped(items, limits)
    improve(waves, limits, overhead, search_budget(len(items)))
    return [_finish(i, w, limits, in_tp_order) for i, w in enumerate(w for w in waves if w.items)]


def _construct(items: Sequence[Item], limits: WaveLimits, overhead: float) -> list[OpenWave]:
    """First fit by decreasing bytes on the predicted cost (see the module docstring).

    ``free[b]`` lists, in wave order, the waves where broker ``b`` still has a slot (a broker
    not in ``free`` has a slot everywhere), so a move only looks at waves with room on all its
    brokers: it walks the shortest of its brokers' lists and compares the first ``WINDOW``
    waves that fit. A new wave is opened when none fits, or, while there are fewer waves than
    the slot bound, when joining would cost more than a new wave does.
    """
    cap, max_wave, max_znode = limits.slot_cap, limits.max_wave_bytes, limits.max_znode_bytes
    uses: dict[int, int] = {}
    for it in items:
        for b in it.brokers:
            uses[b] = uses.get(b, 0) + 1
    slot_bound = -(-max(uses.values(), default=0) // cap)
    # the fewest waves the bytes allow too (the payload, a wave byte limit): without a cap these are
    # the bound, and a move opening a new wave up to it keeps each wave a balanced slice (filling
    # one wave to its payload limit before opening the next put the largest moves together: at 1M
    # partitions that was 4.9x the lower bound)
    room = max_znode - ZNODE_WRAPPER
    slot_bound = max(slot_bound, -(-sum(it.zbytes for it in items) // room))
    if max_wave is not None:
        slot_bound = max(slot_bound, -(-sum(it.nbytes for it in items) // max_wave))
    waves: list[OpenWave] = []
    free: dict[int, list[int]] = {}
    free_set: dict[int, set[int]] = {}
    for it in items:
        brokers = it.brokers
        sets = [free_set[b] for b in brokers if b in free_set]
        order: Iterable[int] = min((free[b] for b in brokers if b in free), key=len) if sets else range(len(waves))
        best_cost = (overhead if len(waves) < slot_bound else float("inf")) if brokers else 0
        best, seen = -1, 0
        nbytes, zbytes = it.nbytes, it.zbytes
        inbound, outbound = tuple(it.inbound.items()), tuple(it.outbound.items())
        for i in order:
            for fs in sets:
                if i not in fs:
                    break
            else:
                w = waves[i]
                if (w.items and max_wave is not None and w.bytes + nbytes > max_wave) or w.znode + zbytes > max_znode:
                    continue
                peak = top = w.peak                                      # = w.peak_with(it), inlined
                loads = w.inb
                for b, v in inbound:
                    if loads.get(b, 0) + v > top:
                        top = loads.get(b, 0) + v
                loads = w.out
                for b, v in outbound:
                    if loads.get(b, 0) + v > top:
                        top = loads.get(b, 0) + v
                cost = top - peak
                if cost < best_cost or (best < 0 and cost == best_cost):
                    best_cost, best = cost, i
                seen += 1
                if cost == 0 or seen >= WINDOW:
                    break
        if best < 0:
            best = len(waves)
            waves.append(OpenWave())
            for b, fl in free.items():
                fl.append(best)
                free_set[b].add(best)
            w = waves[best]
            w.add(it)
        else:
            w = waves[best]
            w.add_at(it, w.peak + best_cost)         # its peak with the item: computed while choosing
        for b in brokers:
            if w.slots[b] >= cap:
                if b not in free:
                    free[b] = list(range(len(waves)))
                    free_set[b] = set(free[b])
                free[b].remove(best)
                free_set[b].discard(best)
    return waves


def _finish(index: int, w: OpenWave, limits: WaveLimits, by_pos: bool = False) -> Wave:
    """The :class:`Wave` of ``w``, its moves in (topic, partition) order (``by_pos``: the items' ``pos``
    is that order, as :func:`pack_waves` sets it for moves given in it: integers sort faster)."""
    per_broker: dict[int, int] = {}
    for b in set(w.inb) | set(w.out):
        per_broker[b] = max(w.inb.get(b, 0), w.out.get(b, 0))
    busiest = max(sorted(per_broker), key=lambda b: per_broker[b], default=None)
    peak = per_broker.get(busiest, 0) if busiest is not None else 0
    seconds = None if not limits.throttle_bytes_per_s else peak / limits.throttle_bytes_per_s
    moves = tuple(it.move for it in sorted(w.items, key=_POS)) if by_pos else \
        tuple(sorted((it.move for it in w.items), key=_TP))
    return Wave(index, moves, w.bytes, busiest,
                peak, seconds, w.znode - 1 if w.items else w.znode, dict(sorted(w.inb.items())),
                dict(sorted(w.out.items())))


def fixed_batches(moves: Iterable[Move], batch: int, limits: WaveLimits) -> list[Wave]:
    """The naive baseline: batches of ``batch`` partitions in (topic, partition) order."""
    order = sorted((m for m in moves), key=lambda m: m.tp)
    out = []
    for i in range(0, len(order), batch):
        w = OpenWave()
        for m in order[i:i + batch]:
            w.add(Item(m))
        out.append(_finish(len(out), w, limits))
    return out


@dataclass(frozen=True)
class WaveBounds:
    """Lower bounds and prediction for a set of waves (bytes and, with a throttle, seconds)."""

    waves: int
    busiest_sum_bytes: int
    lower_bound_bytes: int
    max_inbound: int
    max_outbound: int
    largest_move_bytes: int
    predicted_seconds: float | None
    lower_bound_seconds: float | None

    @property
    def ratio(self) -> float:
        return self.busiest_sum_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0


def wave_bounds(moves: Sequence[Move], waves: Sequence[Wave], limits: WaveLimits) -> WaveBounds:
    if len(moves) >= COLUMNAR_MIN_MOVES:
        # local: numpy only for plans this large (planning.kernels.move_columns)
        from planning.kernels.move_columns import MoveColumns, in_out_largest

        max_in, max_out, largest = in_out_largest(MoveColumns.of(moves))
    else:
        max_in, max_out, largest = _in_out_largest(moves)
    lb = max(max_in, max_out, largest)
    total = sum(w.busiest_bytes for w in waves)
    t = limits.throttle_bytes_per_s
    return WaveBounds(len(waves), total, lb, max_in, max_out, largest,
                      total / t if t else None, lb / t if t else None)


def _in_out_largest(moves: Sequence[Move]) -> tuple[int, int, int]:
    """(max inbound, max outbound over brokers, largest moving partition's bytes)."""
    inb: dict[int, int] = {}
    out: dict[int, int] = {}
    largest = 0
    for m in moves:
        dests = m.destinations
        if not dests:
            continue
        size = m.size
        largest = max(largest, size)
        for d in dests:
            inb[d] = inb.get(d, 0) + size
        leader = m.source_leader
        out[leader] = out.get(leader, 0) + size * len(dests)
    return max(inb.values(), default=0), max(out.values(), default=0), largest


def fixed_batch_bounds(moves: Sequence[Move], batch: int, limits: WaveLimits,
                       like: WaveBounds) -> WaveBounds:
    """``wave_bounds(moves, fixed_batches(moves, batch, limits), limits)`` without building waves.

    ``like`` is :func:`wave_bounds` of the same moves (the lower bounds do not depend on waves).
    """
    if len(moves) >= COLUMNAR_MIN_MOVES:
        # local: numpy only for plans this large (planning.kernels.move_columns)
        from planning.kernels.move_columns import fixed_batches_busiest_sum

        count, total = fixed_batches_busiest_sum(moves, batch)
    else:
        count, total = _fixed_batches_busiest_sum(moves, batch)
    t = limits.throttle_bytes_per_s
    return WaveBounds(count, total, like.lower_bound_bytes, like.max_inbound, like.max_outbound,
                      like.largest_move_bytes, total / t if t else None, like.lower_bound_seconds)


def _fixed_batches_busiest_sum(moves: Sequence[Move], batch: int) -> tuple[int, int]:
    order = sorted(moves, key=lambda m: m.tp)
    total = 0
    count = 0
    for i in range(0, len(order), batch):
        count += 1
        inb: dict[int, int] = {}
        out: dict[int, int] = {}
        for m in order[i:i + batch]:
            dests = m.destinations
            if not dests:
                continue
            size = m.size
            for d in dests:
                inb[d] = inb.get(d, 0) + size
            leader = m.source_leader
            out[leader] = out.get(leader, 0) + size * len(dests)
        total += max(max(inb.values(), default=0), max(out.values(), default=0))
    return count, total


def wave_of(index: int, moves: Iterable[Move], limits: WaveLimits) -> Wave:
    """A :class:`Wave` holding exactly ``moves`` (e.g. a wave split to keep a disk under its limit)."""
    w = OpenWave()
    for m in moves:
        w.add(Item(m))
    return _finish(index, w, limits)
