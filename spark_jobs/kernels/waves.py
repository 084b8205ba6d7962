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
most ``max_moves_per_broker`` slots per broker, at most ``max_wave_bytes`` new-replica bytes, and its
``/admin/reassign_partitions`` payload stays ≤ ``max_znode_bytes``.

Packing: first-fit-decreasing on the cost that matters — moves by decreasing bytes, each into
the wave whose busiest-broker bytes grow least (zero when it fits under the wave's current
maximum), looking at a window of waves from the first one with free slots on the move's
brokers; a new wave when that is cheaper. Large moves therefore share waves with large moves
and small ones fill the gaps, which keeps the sum of per-wave maxima near the lower bound.

Failure: :class:`PlanRefused` for a non-positive limit, or a single move whose entry alone
exceeds the znode budget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

from spark_jobs.kernels.model import Move, PlanRefused

ZNODE_WRAPPER = len(b'{"version":1,"partitions":[]}')
WINDOW = 16


@dataclass(frozen=True)
class WaveLimits:
    """Per-wave limits; ``throttle_bytes_per_s`` only feeds the time prediction."""

    max_moves_per_broker: int = 5
    max_wave_bytes: int | None = None
    max_znode_bytes: int = 512 * 1024
    throttle_bytes_per_s: int | None = None

    def check(self) -> None:
        if self.max_moves_per_broker < 1:
            raise PlanRefused(f"max moves per broker {self.max_moves_per_broker} must be ≥ 1")
        if self.max_wave_bytes is not None and self.max_wave_bytes < 1:
            raise PlanRefused(f"max wave bytes {self.max_wave_bytes} must be ≥ 1 (or unset)")
        if self.max_znode_bytes < 1024:
            raise PlanRefused(f"max znode bytes {self.max_znode_bytes} must be ≥ 1024")
        if self.throttle_bytes_per_s is not None and self.throttle_bytes_per_s < 1:
            raise PlanRefused(f"throttle {self.throttle_bytes_per_s} B/s must be ≥ 1 (or unset)")


@dataclass(frozen=True)
class Wave:
    """One wave: its moves (sorted by tp) and what it costs."""

    index: int
    moves: tuple[Move, ...]
    bytes: int
    busiest_broker: int | None
    busiest_bytes: int
    predicted_seconds: float | None
    znode_bytes: int
    inbound: Mapping[int, int] = field(default_factory=dict)
    outbound: Mapping[int, int] = field(default_factory=dict)


# len('{"topic":' ',"partition":' ',"replicas":[' ']}') + the comma between entries
_ENTRY_FIXED = 9 + 13 + 13 + 2 + 1


@lru_cache(maxsize=1 << 16)
def _topic_json_bytes(topic: str) -> int:
    return len(json.dumps(topic, ensure_ascii=False).encode("utf-8"))


def entry_bytes(m: Move) -> int:
    """Bytes this move adds to the ``/admin/reassign_partitions`` payload (with its comma).

    The length of ``kafka_zk.codecs.dumps({"topic", "partition", "replicas"}) + 1`` (compact
    JSON, integers in decimal), counted without encoding the entry.
    """
    digits_and_commas = len(",".join(map(str, m.target)))
    return _ENTRY_FIXED + _topic_json_bytes(m.tp.topic) + len(str(m.tp.partition)) + digits_and_commas


def move_loads(m: Move) -> tuple[dict[int, int], dict[int, int]]:
    """(inbound, outbound) bytes per broker of one move."""
    dests = m.destinations
    inbound = {d: m.size for d in dests}
    outbound = {m.source_leader: m.size * len(dests)} if dests else {}
    return inbound, outbound


def _slot_brokers(m: Move) -> tuple[int, ...]:
    """The brokers a move keeps busy: the one it copies from (the leader) and each destination."""
    return tuple(dict.fromkeys((m.source_leader,) + m.destinations)) if m.destinations else ()


class _Open:
    __slots__ = ("moves", "inb", "out", "slots", "bytes", "znode", "peak")

    def __init__(self) -> None:
        self.moves: list[Move] = []
        self.inb: dict[int, int] = {}
        self.out: dict[int, int] = {}
        self.slots: dict[int, int] = {}
        self.bytes = 0
        self.znode = ZNODE_WRAPPER
        self.peak = 0


def _peak_after(w: _Open, inbound: Mapping[int, int], outbound: Mapping[int, int]) -> int:
    peak = w.peak
    for b, v in inbound.items():
        peak = max(peak, w.inb.get(b, 0) + v)
    for b, v in outbound.items():
        peak = max(peak, w.out.get(b, 0) + v)
    return peak


def _fits(w: _Open, brokers: Sequence[int], nbytes: int, zbytes: int, limits: WaveLimits) -> bool:
    if any(w.slots.get(b, 0) >= limits.max_moves_per_broker for b in brokers):
        return False
    if w.moves and limits.max_wave_bytes is not None and w.bytes + nbytes > limits.max_wave_bytes:
        return False
    return w.znode + zbytes <= limits.max_znode_bytes


def pack_waves(moves: Iterable[Move], limits: WaveLimits) -> list["Wave"]:
    """Waves for ``moves`` under ``limits`` (see the module docstring for the packing rule)."""
    limits.check()
    order = sorted(moves, key=lambda m: (-m.size * len(m.destinations), m.tp))
    cap, max_wave, max_znode = limits.max_moves_per_broker, limits.max_wave_bytes, limits.max_znode_bytes
    waves: list[_Open] = []
    first_free: dict[int, int] = {}
    for m in order:
        zbytes = entry_bytes(m)
        if ZNODE_WRAPPER + zbytes > max_znode:
            raise PlanRefused(f"{m.tp}: its reassignment entry ({zbytes} B) alone exceeds the znode "
                              f"budget {max_znode} B; raise max_znode_bytes")
        dests, size = m.destinations, m.size
        nbytes = size * len(dests)
        inbound = {d: size for d in dests}                      # = move_loads(m), inlined
        outbound = {m.source_leader: nbytes} if dests else {}
        brokers = tuple(dict.fromkeys((m.source_leader,) + dests)) if dests else ()  # = _slot_brokers(m)
        start = max([first_free.get(b, 0) for b in brokers], default=0)
        best_cost, best = (max(size, nbytes, 0) if dests else 0), -1
        for i in range(start, min(len(waves), start + WINDOW)):
            w = waves[i]
            slots = w.slots
            if any(slots.get(b, 0) >= cap for b in brokers):  # _fits, inlined
                continue
            if w.moves and max_wave is not None and w.bytes + nbytes > max_wave:
                continue
            if w.znode + zbytes > max_znode:
                continue
            cost = _peak_after(w, inbound, outbound) - w.peak
            if cost < best_cost or (best < 0 and cost == best_cost):
                best_cost, best = cost, i
            if cost == 0:
                break
        if best < 0:
            waves.append(_Open())
            best = len(waves) - 1
        w = waves[best]
        w.moves.append(m)
        w.peak = _peak_after(w, inbound, outbound)
        for b, v in inbound.items():
            w.inb[b] = w.inb.get(b, 0) + v
        for b, v in outbound.items():
            w.out[b] = w.out.get(b, 0) + v
        slots = w.slots
        for b in brokers:
            slots[b] = slots.get(b, 0) + 1
        w.bytes += nbytes
        w.znode += zbytes
        for b in brokers:
            if slots[b] < cap:
                continue  # this wave still has room on b: first_free[b] (≤ best) is unchanged
            j = first_free.get(b, 0)
            while j < len(waves) and waves[j].slots.get(b, 0) >= cap:
                j += 1
            first_free[b] = j
    return [_finish(i, w, limits) for i, w in enumerate(waves)]


def _finish(index: int, w: _Open, limits: WaveLimits) -> Wave:
    per_broker: dict[int, int] = {}
    for b in set(w.inb) | set(w.out):
        per_broker[b] = max(w.inb.get(b, 0), w.out.get(b, 0))
    busiest = max(sorted(per_broker), key=lambda b: per_broker[b], default=None)
    peak = per_broker.get(busiest, 0) if busiest is not None else 0
    seconds = None if not limits.throttle_bytes_per_s else peak / limits.throttle_bytes_per_s
    return Wave(index, tuple(sorted(w.moves, key=lambda m: m.tp)), w.bytes, busiest, peak, seconds,
                w.znode - 1 if w.moves else w.znode, dict(sorted(w.inb.items())),
                dict(sorted(w.out.items())))


def fixed_batches(moves: Iterable[Move], batch: int, limits: WaveLimits) -> list[Wave]:
    """The naive baseline: batches of ``batch`` partitions in (topic, partition) order."""
    order = sorted((m for m in moves), key=lambda m: m.tp)
    out = []
    for i in range(0, len(order), batch):
        w = _Open()
        for m in order[i:i + batch]:
            inbound, outbound = move_loads(m)
            w.moves.append(m)
            for b, v in inbound.items():
                w.inb[b] = w.inb.get(b, 0) + v
            for b, v in outbound.items():
                w.out[b] = w.out.get(b, 0) + v
            w.bytes += m.size * len(m.destinations)
            w.znode += entry_bytes(m)
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
    max_in, max_out = max(inb.values(), default=0), max(out.values(), default=0)
    lb = max(max_in, max_out, largest)
    total = sum(w.busiest_bytes for w in waves)
    t = limits.throttle_bytes_per_s
    return WaveBounds(len(waves), total, lb, max_in, max_out, largest,
                      total / t if t else None, lb / t if t else None)


def fixed_batch_bounds(moves: Sequence[Move], batch: int, limits: WaveLimits,
                       like: WaveBounds) -> WaveBounds:
    """``wave_bounds(moves, fixed_batches(moves, batch, limits), limits)`` without building waves.

    ``like`` is :func:`wave_bounds` of the same moves (the lower bounds do not depend on waves).
    """
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
    t = limits.throttle_bytes_per_s
    return WaveBounds(count, total, like.lower_bound_bytes, like.max_inbound, like.max_outbound,
                      like.largest_move_bytes, total / t if t else None, like.lower_bound_seconds)
