"""The local search after wave packing: only ever lowers the predicted total.

The objective is the one :mod:`planning.kernels.waves` packs for: the sum of each wave's
busiest-broker bytes plus ``overhead`` bytes per wave. Two moves:

* relocate — take an item on a wave's busiest broker to the other wave (with a free slot on the
  item's brokers) where the total drops most;
* dissolve — empty a wave whose items all fit elsewhere for less than the wave costs, smallest
  waves first, stopping after ``DISSOLVE_MISSES`` waves in a row that stay.

Every item read counts against a budget of ``IMPROVE_CHECKS_PER_MOVE`` per move plus
``IMPROVE_CHECKS_MIN``, at most ``IMPROVE_CHECKS_MAX`` (:func:`search_budget`), so the work stays
linear in the moves and bounded at any size. Deterministic: fixed orders, strict gains. The
waves are :class:`~planning.kernels.wave_items.OpenWave` objects ( ``items``, ``slots``, ``peak``, ``fits``,
``peak_with``, ``peak_without``, ``add``, ``remove``, ``hot_items``), changed in place.

Failure: none of its own (it only moves items between waves that fit them).
"""

from __future__ import annotations

from operator import attrgetter

from planning.kernels.wave_items import Item, OpenWave, WaveLimits

IMPROVE_CHECKS_PER_MOVE = 40    # local-search budget: (move, wave) checks per move, plus ...
IMPROVE_CHECKS_MIN = 200_000    # ... this many, and never more than ...
IMPROVE_CHECKS_MAX = 300_000    # ... this many (≈ 0.4 s of Python at any size)
DISSOLVE_MISSES = 8             # a dissolving pass stops after this many waves in a row stay
_BY_RANK = attrgetter("rank")    # items sort by their place in decreasing bytes


def search_budget(moves: int) -> int:
    """The checks :func:`improve` may spend on ``moves`` moves."""
    return min(IMPROVE_CHECKS_PER_MOVE * moves + IMPROVE_CHECKS_MIN, IMPROVE_CHECKS_MAX)


class _FreeSlots:
    """Per broker, the indexes of the waves where it has a free slot (kept current by ``changed``)."""

    def __init__(self, waves: list[OpenWave], cap: int) -> None:
        self.waves, self.cap = waves, cap
        self.every = set(range(len(waves)))
        brokers = {b for w in waves for b in w.slots}
        self.free = {b: {i for i, w in enumerate(waves) if w.slots.get(b, 0) < cap} for b in sorted(brokers)}

    def candidates(self, it: Item) -> list[int]:
        """Waves (in order) with a slot on every broker of ``it``."""
        sets = [self.free.get(b, self.every) for b in it.brokers] or [self.every]
        return sorted(sets[0].intersection(*sets[1:]))

    def changed(self, it: Item, i: int) -> None:
        """Wave ``i`` gained or lost ``it``: refresh its brokers' entries."""
        slots = self.waves[i].slots
        for b in it.brokers:
            free = self.free.get(b)
            if free is None:
                free = self.free[b] = set(self.every)
            if slots.get(b, 0) < self.cap:
                free.add(i)
            else:
                free.discard(i)


def improve(waves: list[OpenWave], limits: WaveLimits, overhead: float, budget: int) -> None:
    """Local search on the predicted total: relocate a wave's peak items, dissolve small waves.

    A relocation takes an item on a wave's busiest broker to the other wave where the total
    (sum of wave peaks, plus ``overhead`` per wave) drops most; dissolving moves every item of a
    wave elsewhere when that is cheaper than the wave itself. Only waves with a slot on the
    item's brokers are looked at; ``budget`` caps those (item, wave) checks, so the work is
    linear in the moves. Deterministic: fixed orders, strict gains.
    """
    free = _FreeSlots(waves, limits.slot_cap)
    checks = 0
    while checks < budget:
        changed = False
        for wi, w in enumerate(waves):
            checks += len(w.items)              # finding the hot items reads every item
            for it in w.hot_items() if w.items else ():
                if checks >= budget:
                    return
                gain = w.peak - w.peak_without(it) + (overhead if len(w.items) == 1 else 0)
                if gain <= 0:
                    continue
                best, growth, looked = _cheapest(waves, free, it, w, limits)
                checks += looked
                if best >= 0 and growth < gain:
                    w.remove(it)
                    waves[best].add(it)
                    free.changed(it, wi)
                    free.changed(it, best)
                    changed = True
        checks, dissolved = _dissolve(waves, free, limits, overhead, checks, budget)
        if not (changed or dissolved):
            return


def _cheapest(waves: list[OpenWave], free: _FreeSlots, it: Item, skip: OpenWave,
              limits: WaveLimits) -> tuple[int, int, int]:
    """(index, peak growth) of the non-empty wave other than ``skip`` where ``it`` is cheapest
    (-1 if none fits), and how many waves were looked at."""
    best, best_growth = -1, 0
    candidates = free.candidates(it)
    for vi in candidates:
        v = waves[vi]
        if v is skip or not v.items or not v.fits(it, limits):
            continue
        growth = v.peak_with(it) - v.peak
        if best < 0 or growth < best_growth:
            best, best_growth = vi, growth
    return best, best_growth, len(candidates)


def _dissolve(waves: list[OpenWave], free: _FreeSlots, limits: WaveLimits, overhead: float, checks: int,
              budget: int) -> tuple[int, bool]:
    """Empty the waves whose items all fit elsewhere for less than the wave costs, smallest first.

    Stops after ``DISSOLVE_MISSES`` waves in a row that cannot be emptied (the next are larger).
    """
    dissolved, misses = False, 0
    for wi in sorted((i for i, w in enumerate(waves) if w.items), key=lambda i: (waves[i].peak, len(waves[i].items), i)):
        w = waves[wi]
        placed: list[tuple[Item, int]] = []
        extra = 0
        for it in sorted(w.items, key=_BY_RANK):
            best, growth, looked = _cheapest(waves, free, it, w, limits)
            checks += looked
            if best < 0 or checks >= budget:
                break
            waves[best].add(it)
            free.changed(it, best)
            placed.append((it, best))
            extra += growth
            if extra >= w.peak + overhead:
                break
        if len(placed) == len(w.items) and extra < w.peak + overhead:
            for it, _ in placed:
                w.remove(it)
                free.changed(it, wi)
            dissolved, misses = True, 0
        else:
            for it, vi in reversed(placed):
                waves[vi].remove(it)
                free.changed(it, vi)
            misses += 1
        if checks >= budget or misses >= DISSOLVE_MISSES:
            break
    return checks, dissolved
