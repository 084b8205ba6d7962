"""What the wave packer and its local search work on: the limits, and each move as an item.

:class:`WaveLimits` are the per-wave limits (bytes, the ``/admin/reassign_partitions`` payload,
and slots per broker only when a person sets a cap: by default none, the waves are then sized by
bytes and the predicted time alone). :class:`Item` is one move with what packing needs of it
computed once (bytes, per-broker loads, the brokers it keeps busy, its payload bytes);
:class:`OpenWave` is a wave being filled, with its per-broker loads, slots and peak kept current
as items come and go. :mod:`planning.kernels.waves` constructs waves from these and
:mod:`planning.kernels.wave_search` improves them; both import this module, never each other's
internals.

Failure: :meth:`WaveLimits.check` raises :class:`PlanRefused` for a non-positive limit.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from operator import attrgetter

from kafka_zk.limits import ADMIN_BATCH_BYTES
from planning.model import Move, PlanRefused

ZNODE_WRAPPER = len(b'{"version":1,"partitions":[]}')
REFERENCE_THROTTLE = 50 * 1024 * 1024  # weighs the per-wave overhead when no throttle is given
#: the slots a broker has in a wave when no cap is set: more than any plan's moves
UNCAPPED = 1 << 62


@dataclass(frozen=True)
class WaveLimits:
    """Per-wave limits; ``throttle_bytes_per_s`` only feeds the time prediction;
    ``max_moves_per_broker`` None (the default): no cap on a broker's moves in a wave."""

    max_moves_per_broker: int | None = None
    max_wave_bytes: int | None = None
    max_znode_bytes: int = ADMIN_BATCH_BYTES
    throttle_bytes_per_s: int | None = None
    wave_overhead_s: float = 10.0

    def overhead_bytes(self) -> float:
        """The per-wave overhead as bytes at the throttle (the runbook default when unset)."""
        return self.wave_overhead_s * (self.throttle_bytes_per_s or REFERENCE_THROTTLE)

    @property
    def slot_cap(self) -> int:
        """The slots a broker has in one wave: the person's cap, else :data:`UNCAPPED`."""
        return UNCAPPED if self.max_moves_per_broker is None else self.max_moves_per_broker

    def check(self) -> None:
        if self.max_moves_per_broker is not None and self.max_moves_per_broker < 1:
            raise PlanRefused(f"max moves per broker {self.max_moves_per_broker} must be ≥ 1")
        if self.max_wave_bytes is not None and self.max_wave_bytes < 1:
            raise PlanRefused(f"max wave bytes {self.max_wave_bytes} must be ≥ 1 (or unset)")
        if self.max_znode_bytes < 1024:
            raise PlanRefused(f"max znode bytes {self.max_znode_bytes} must be ≥ 1024")
        if self.throttle_bytes_per_s is not None and self.throttle_bytes_per_s < 1:
            raise PlanRefused(f"throttle {self.throttle_bytes_per_s} B/s must be ≥ 1 (or unset)")
        if self.wave_overhead_s < 0:
            raise PlanRefused(f"wave overhead {self.wave_overhead_s} s must be ≥ 0")


# len('{"topic":' ',"partition":' ',"replicas":[' ']}') + the comma between entries
_ENTRY_FIXED = 9 + 13 + 13 + 2 + 1


@lru_cache(maxsize=1 << 16)
def _topic_json_bytes(topic: str) -> int:
    return len(json.dumps(topic, ensure_ascii=False).encode("utf-8"))


@lru_cache(maxsize=1 << 16)
def _decimal_len(n: int) -> int:
    return len(str(n))


def entry_bytes(m: Move) -> int:
    """Bytes this move adds to the ``/admin/reassign_partitions`` payload (with its comma).

    The length of ``kafka_zk.codecs.dumps({"topic", "partition", "replicas"}) + 1`` (compact
    JSON, integers in decimal), counted without encoding the entry.
    """
    target = m.target
    digits_and_commas = sum(map(_decimal_len, target)) + max(len(target) - 1, 0)
    return _ENTRY_FIXED + _topic_json_bytes(m.tp.topic) + len(str(m.tp.partition)) + digits_and_commas


def move_loads(m: Move) -> tuple[dict[int, int], dict[int, int]]:
    """(inbound, outbound) bytes per broker of one move."""
    dests = m.destinations
    inbound = {d: m.size for d in dests}
    outbound = {m.source_leader: m.size * len(dests)} if dests else {}
    return inbound, outbound


def slot_brokers(m: Move) -> tuple[int, ...]:
    """The brokers a move keeps busy: the one it copies from (the leader) and each destination."""
    return tuple(dict.fromkeys((m.source_leader,) + m.destinations)) if m.destinations else ()


class Item:
    """A move with what packing needs of it, computed once; ``rank`` = its place by decreasing bytes,
    ``pos`` its place in (topic, partition) order when :func:`~planning.kernels.waves.pack_waves` knows it."""

    __slots__ = ("move", "size", "nbytes", "inbound", "outbound", "brokers", "zbytes", "rank", "pos")

    def __init__(self, m: Move) -> None:
        dests, size = m.destinations, m.size
        self.move = m
        self.size = size
        self.nbytes = nbytes = size * len(dests)
        self.inbound = {d: size for d in dests}                      # = move_loads(m)
        if dests:
            src = m.source_leader                                   # a current replica: never a destination
            self.outbound = {src: nbytes}
            self.brokers = (src,) + dests                           # = slot_brokers(m)
        else:
            self.outbound, self.brokers = {}, ()
        self.zbytes = entry_bytes(m)
        self.rank = self.pos = 0


class OpenWave:
    """A wave being packed: its items, per-broker bytes and slots, byte and znode totals, peak."""

    __slots__ = ("items", "inb", "out", "slots", "bytes", "znode", "peak")

    def __init__(self) -> None:
        self.items: dict[Item, None] = {}      # insertion-ordered set: O(1) removal
        self.inb: dict[int, int] = {}
        self.out: dict[int, int] = {}
        self.slots: dict[int, int] = {}
        self.bytes = 0
        self.znode = ZNODE_WRAPPER
        self.peak = 0

    @classmethod
    def of(cls, items: list[Item], inb: dict[int, int], out: dict[int, int], nbytes: int, znode: int,
           peak: int) -> "OpenWave":
        """A wave holding ``items`` whose loads, bytes, payload and peak the caller kept (slots counted here)."""
        w = cls()
        w.items = dict.fromkeys(items)
        w.inb, w.out, w.bytes, w.znode, w.peak = inb, out, nbytes, znode, peak
        w.slots = dict(Counter(chain.from_iterable(it.brokers for it in items)))
        return w

    def fits(self, it: Item, limits: WaveLimits) -> bool:
        slots, cap = self.slots, limits.slot_cap
        if any(slots.get(b, 0) >= cap for b in it.brokers):
            return False
        if self.items and limits.max_wave_bytes is not None and self.bytes + it.nbytes > limits.max_wave_bytes:
            return False
        return self.znode + it.zbytes <= limits.max_znode_bytes

    def peak_with(self, it: Item) -> int:
        peak = self.peak
        inb, out = self.inb, self.out
        for b, v in it.inbound.items():
            peak = max(peak, inb.get(b, 0) + v)
        for b, v in it.outbound.items():
            peak = max(peak, out.get(b, 0) + v)
        return peak

    def peak_without(self, it: Item) -> int:
        self._shift(it, -1)
        peak = self._peak()
        self._shift(it, 1)
        return peak

    def add(self, it: Item) -> None:
        self.add_at(it, self.peak_with(it))

    def add_at(self, it: Item, peak: int) -> None:
        """:meth:`add` when the caller has computed :meth:`peak_with` of ``it`` already."""
        self.peak = peak
        self.items[it] = None
        self._shift(it, 1)

    def remove(self, it: Item) -> None:
        del self.items[it]
        self._shift(it, -1)
        self.peak = self._peak()

    def _peak(self) -> int:
        return max(max(self.inb.values(), default=0), max(self.out.values(), default=0))

    def _shift(self, it: Item, sign: int) -> None:
        for loads, delta in ((self.inb, it.inbound), (self.out, it.outbound)):
            for b, v in delta.items():
                left = loads.get(b, 0) + sign * v
                if left:
                    loads[b] = left
                else:
                    loads.pop(b, None)
        slots = self.slots
        for b in it.brokers:
            left = slots.get(b, 0) + sign
            if left:
                slots[b] = left
            else:
                slots.pop(b, None)
        self.bytes += sign * it.nbytes
        self.znode += sign * it.zbytes

    def hot_items(self) -> list[Item]:
        """Items on a broker at the wave's peak (the ones that make the wave last), largest first."""
        peak = self.peak
        hot_in = {b for b, v in self.inb.items() if v == peak}
        hot_out = {b for b, v in self.out.items() if v == peak}
        hot = [it for it in self.items if not (hot_in.isdisjoint(it.inbound) and hot_out.isdisjoint(it.outbound))]
        hot.sort(key=_BY_RANK)
        return hot



_BY_RANK = attrgetter("rank")
