"""The wave construction without a per-broker cap: balanced slices, each move compared on few waves.

As many waves as the bytes need (:func:`fewest_waves_for_bytes`); moves by decreasing bytes, each
into the wave with room where the wave's busiest-broker bytes grow least, among equals where the
move's own brokers hold least after it (inbound on its destinations, outbound on the broker it
copies from), among equals the first — so each broker's bytes spread evenly over the waves and
every wave is a balanced slice (1M partitions, 31 waves: 1.15x the lower bound, where first fit
under the wave's peak gave 2.95x). A wave is opened when no wave has room.

That choice is made without comparing every wave (above :data:`COMPARE_EVERY_WAVE_UP_TO` waves):
the move is first compared on its candidates — for each of its brokers, the first wave where that
broker holds least. When the best of them takes the move under its peak, a wave as good or better
must hold at most ``own - v`` on each broker (``v`` what the move adds there), so only the waves
passing that test on every broker are compared as well (none when the best candidate is provably
first: ``own`` equals the least any wave can give and no earlier wave can give it); otherwise every
wave is. So the waves are exactly those of comparing every wave for every move, at about half the
CPU (10⁶ partitions, 24 waves; BENCHMARKS.md, "The 1M command, fifth pass").

Loads are kept per broker as one list over the waves (``min``, ``list.index`` and the threshold test
run in C); the :class:`OpenWave` objects the search works on are built once, at the end.
Deterministic. Raises nothing.
"""

from __future__ import annotations

from itertools import chain, compress
from typing import Iterable, Sequence

from planning.kernels.wave_items import ZNODE_WRAPPER, Item, OpenWave, WaveLimits

#: up to this many waves every move is compared on every wave (about what finding its candidates costs)
COMPARE_EVERY_WAVE_UP_TO = 8


def fewest_waves_for_bytes(items: Sequence[Item], limits: WaveLimits) -> int:
    """The fewest waves the payload and a wave byte limit allow for ``items`` (at least 1)."""
    n = -(-sum(it.zbytes for it in items) // (limits.max_znode_bytes - ZNODE_WRAPPER))
    if limits.max_wave_bytes is not None:
        n = max(n, -(-sum(it.nbytes for it in items) // limits.max_wave_bytes))
    return max(1, n)


def construct_uncapped(items: Sequence[Item], limits: WaveLimits) -> list[OpenWave]:
    """Waves for ``items`` (sorted by decreasing bytes) as the module docstring says."""
    max_wave, max_znode = limits.max_wave_bytes, limits.max_znode_bytes
    n = fewest_waves_for_bytes(items, limits)
    every = n <= COMPARE_EVERY_WAVE_UP_TO
    inbound: dict[int, list[int]] = {}      # broker -> its inbound bytes in each wave
    outbound: dict[int, list[int]] = {}     # broker -> its outbound bytes in each wave
    peak, znode, wbytes, count = [0] * n, [ZNODE_WRAPPER] * n, [0] * n, [0] * n
    fill = (znode, wbytes, count, max_wave, max_znode)
    where: list[int] = []
    for it in items:
        nbytes, zbytes = it.nbytes, it.zbytes
        loads: list[tuple[list[int], int]] = []      # (the broker's per-wave list, what the move adds)
        for side, delta in ((inbound, it.inbound), (outbound, it.outbound)):
            for b, v in delta.items():
                per_wave = side.get(b)
                if per_wave is None:
                    per_wave = side[b] = [0] * len(peak)
                loads.append((per_wave, v))
        if every or not loads:
            best, best_growth, best_own = _best(range(len(peak)), loads, peak, fill, nbytes, zbytes, -1, 0, 0)
        else:
            floor, at_floor, cands = 0, len(peak), set()    # no wave gives the move's brokers less than floor
            for per_wave, v in loads:
                least = min(per_wave)
                first = per_wave.index(least)
                cands.add(first)
                if least + v > floor:
                    floor, at_floor = least + v, first
                elif least + v == floor and first < at_floor:
                    at_floor = first
            best, best_growth, best_own = _best(sorted(cands), loads, peak, fill, nbytes, zbytes, -1, 0, 0)
            if best < 0 or best_growth:         # no candidate has room under its peak: every wave
                best, best_growth, best_own = _best(range(len(peak)), loads, peak, fill, nbytes, zbytes,
                                                    best, best_growth, best_own)
            elif best_own > floor or best != at_floor:
                # a wave as good or better holds at most best_own - v on each of the move's brokers
                rest = None
                for per_wave, v in loads:
                    below = set(compress(range(len(peak)), map((best_own - v).__ge__, per_wave)))
                    rest = below if rest is None else rest & below
                rest -= cands
                if rest:
                    best, best_growth, best_own = _best(sorted(rest), loads, peak, fill, nbytes, zbytes,
                                                        best, best_growth, best_own)
        if best < 0:                            # no wave has room: a new one
            best = len(peak)
            for per_wave in chain(inbound.values(), outbound.values()):
                per_wave.append(0)
            peak.append(0)
            znode.append(ZNODE_WRAPPER)
            wbytes.append(0)
            count.append(0)
            best_own = max((v for _, v in loads), default=0)
        for per_wave, v in loads:
            per_wave[best] += v
        if best_own > peak[best]:
            peak[best] = best_own
        znode[best] += zbytes
        wbytes[best] += nbytes
        count[best] += 1
        where.append(best)
    members: list[list[Item]] = [[] for _ in peak]
    for it, i in zip(items, where):
        members[i].append(it)
    return [OpenWave.of(members[i], {b: v[i] for b, v in inbound.items() if v[i]},
                        {b: v[i] for b, v in outbound.items() if v[i]}, wbytes[i], znode[i], peak[i])
            for i in range(len(peak))]


def _best(order: Iterable[int], loads: list[tuple[list[int], int]], peak: list[int],
          fill: tuple[list[int], list[int], list[int], int | None, int], nbytes: int, zbytes: int,
          best: int, best_growth: int, best_own: int) -> tuple[int, int, int]:
    """The wave of ``order`` with room where the move's key (peak growth, own load, index) is least,
    or ``best`` (-1: none yet) when that one's key is less."""
    znode, wbytes, count, max_wave, max_znode = fill
    for i in order:
        if (count[i] and max_wave is not None and wbytes[i] + nbytes > max_wave) or znode[i] + zbytes > max_znode:
            continue
        own = 0
        for per_wave, v in loads:
            if per_wave[i] + v > own:
                own = per_wave[i] + v
        growth = own - peak[i] if own > peak[i] else 0
        if best < 0 or growth < best_growth or (growth == best_growth and (own < best_own or
                                                                          (own == best_own and i < best))):
            best, best_growth, best_own = i, growth, own
    return best, best_growth, best_own
