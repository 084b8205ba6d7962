"""Disk capacity in plans: per-step fill of every broker, wave order, refusals that say what fits.

Model (what a Kafka broker's disk goes through during a ZooKeeper-mode reassignment): a new
replica grows on its destination while the old replica stays on its source until the
partition's reassignment completes (the controller then stops and deletes it). A wave ends when
its last partition completes. So for a broker ``b`` and wave ``w`` entered with ``used[b]``
bytes, the peak inside the wave is ``used[b] + inbound_w[b]`` (every copy done, no source
deleted yet) and the level after it is that minus the bytes of the replicas ``w`` removes from
``b``. A plan *keeps a broker under its limit* (capacity × threshold) when, at every wave, any
broker that receives data stays at or under its limit at the peak. A broker already over its
limit that receives nothing is not made worse by the plan: it is reported, not refused.

Pure (no I/O, no Spark). Sizes are those of the plan's moves (bytes one replica copies).

Failure: :class:`~planning.model.PlanRefused` from :func:`order_waves` when no order
of the waves keeps every receiving broker under its limit, naming the broker, its bytes and
the shortfall; :func:`shortfall_message` builds the refusal of a placement that does not fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from kafka_zk.capacity import DiskCapacity
from planning.model import PlanRefused, Wave
from planning.kernels.waves import COLUMNAR_MIN_MOVES, WaveLimits, wave_of

GROWTH_FACTOR = 1.5      # the report explains every broker whose bytes grow more than this
DISK_WALK_CELLS_MAX = 2_000_000     # waves × brokers up to which the disk walk runs over arrays


def human(n: float) -> str:
    """Bytes as KiB/MiB/GiB/TiB with one decimal (the planner's own, so kernels stay I/O free)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def removed_bytes(wave: Wave) -> dict[int, int]:
    """Bytes each broker frees when the wave's partitions complete (its replicas that leave)."""
    out: dict[int, int] = {}
    for m in wave.moves:
        for b in m.sources:
            out[b] = out.get(b, 0) + m.size
    return out


def _overruns(used: Mapping[int, int], wave: Wave, limits: Mapping[int, int]) -> list[tuple[int, int]]:
    """(broker, bytes over its limit at the wave's peak) for receiving brokers that overrun."""
    out = []
    for b, inbound in wave.inbound.items():
        limit = limits.get(b)
        if limit is not None and inbound > 0 and used.get(b, 0) + inbound > limit:
            out.append((b, used.get(b, 0) + inbound - limit))
    return out


def _advance(used: dict[int, int], wave: Wave) -> None:
    for b, inbound in wave.inbound.items():
        used[b] = used.get(b, 0) + inbound
    for b, freed in removed_bytes(wave).items():
        used[b] = used.get(b, 0) - freed


def fits_in_order(waves: Sequence[Wave], before: Mapping[int, int], limits: Mapping[int, int]) -> bool:
    """Whether running ``waves`` in their order keeps every receiving broker under its limit."""
    used = dict(before)
    for w in waves:
        if _overruns(used, w, limits):
            return False
        _advance(used, w)
    return True


def order_waves(waves: Sequence[Wave], before: Mapping[int, int], limits: Mapping[int, int],
                wave_limits: WaveLimits) -> list[Wave]:
    """``waves`` in an order that keeps every receiving broker under its limit, re-indexed.

    The packed order is kept when it already fits (always the case for a decommission whose
    final state fits: kept brokers only gain). Otherwise waves are taken greedily: among the
    waves that fit now, the one leaving the fullest limited broker lowest, then the lowest
    index; a wave that frees bytes on a full broker thus runs before one that fills it. When no
    wave fits, the first one is split: its moves onto brokers that would overrun go to a wave
    of their own (or, if all of them do, half of them), since inside one wave the new copies
    and the old replicas are all on disk at once.
    """
    if not limits or fits_in_order(waves, before, limits):
        return list(waves)
    used = dict(before)
    left = list(waves)
    ordered: list[Wave] = []
    while left:
        best, best_key = None, None
        for k, w in enumerate(left):
            if _overruns(used, w, limits):
                continue
            trial = dict(used)
            _advance(trial, w)
            key = (max((trial.get(b, 0) / lim for b, lim in limits.items() if lim > 0), default=0.0), k)
            if best_key is None or key < best_key:
                best, best_key = k, key
        if best is None:
            first = left[0]
            if len(first.moves) == 1:
                b, excess = max(_overruns(used, first, limits), key=lambda t: (t[1], -t[0]))
                raise PlanRefused(
                    f"no order of the plan's waves keeps broker {b} under its disk limit ({human(limits[b])}): "
                    f"moving {first.moves[0].tp} onto it needs {human(excess)} more than the limit allows at "
                    f"that point; free space on broker {b}, raise its capacity or the threshold")
            hot = {b for b, _x in _overruns(used, first, limits)}
            keep = [m for m in first.moves if hot.isdisjoint(m.destinations)]
            rest = [m for m in first.moves if not hot.isdisjoint(m.destinations)]
            if not keep:
                keep, rest = rest[:len(rest) // 2], rest[len(rest) // 2:]
            left[0:1] = [wave_of(first.index, keep, wave_limits), wave_of(first.index, rest, wave_limits)]
            continue
        w = left.pop(best)
        _advance(used, w)
        ordered.append(w)
    return [replace(w, index=i) for i, w in enumerate(ordered)]


@dataclass(frozen=True)
class BrokerDisk:
    """One broker's disk through the plan: bytes before, peak during a wave, after; capacity."""

    broker: int
    before: int
    peak: int
    peak_wave: int | None
    after: int
    capacity: int | None
    limit: int | None

    def pct(self, value: int) -> float | None:
        return None if not self.capacity else round(100.0 * value / self.capacity, 1)


def disk_profile(waves: Sequence[Wave], before: Mapping[int, int], capacity: DiskCapacity | None,
                 brokers: Sequence[int]) -> list[BrokerDisk]:
    """Per broker: bytes before, the highest peak inside any wave, after, capacity and limit."""
    return _disk_profile(waves, before, capacity, brokers)[0]


def _disk_profile(waves: Sequence[Wave], before: Mapping[int, int], capacity: DiskCapacity | None,
                  brokers: Sequence[int]) -> tuple[list[BrokerDisk], dict[int, int]]:
    """:func:`disk_profile`, and the new replicas each broker receives."""
    if sum(len(w.moves) for w in waves) >= COLUMNAR_MIN_MOVES and \
            len(waves) * (len(brokers) + 1) <= DISK_WALK_CELLS_MAX:
        # local: numpy only for plans this large (planning.kernels.move_columns)
        from planning.kernels.move_columns import disk_walk

        walk = disk_walk(waves, before, brokers)
        return [BrokerDisk(b, before.get(b, 0), pk, pw, after, capacity.capacity(b) if capacity else None,
                           capacity.limit(b) if capacity else None)
                for b, pk, pw, after in zip(brokers, walk.peak, walk.peak_wave, walk.after)], walk.received
    received: dict[int, int] = {}
    for w in waves:
        for m in w.moves:
            for b in m.destinations:
                received[b] = received.get(b, 0) + 1
    used = {b: before.get(b, 0) for b in brokers}
    peak = dict(used)
    peak_wave: dict[int, int | None] = {b: None for b in brokers}
    for w in waves:
        for b, inbound in w.inbound.items():
            level = used.get(b, 0) + inbound
            if level > peak.get(b, 0):
                peak[b], peak_wave[b] = level, w.index
        _advance(used, w)
    out = []
    for b in brokers:
        cap = capacity.capacity(b) if capacity else None
        lim = capacity.limit(b) if capacity else None
        out.append(BrokerDisk(b, before.get(b, 0), peak.get(b, 0), peak_wave.get(b), used.get(b, 0), cap, lim))
    return out, received


def shortfall_message(after: Mapping[int, int], limits: Mapping[int, int], capacity: DiskCapacity,
                      racks: Mapping[int, str], kept: Sequence[int], removed: Sequence[int]) -> str:
    """Why a least-movement placement does not fit, and what would (brokers, bytes, racks).

    ``after`` is the per-broker bytes of the placement made without the disk limit.
    """
    over = sorted(((b, after.get(b, 0) - limits[b]) for b in kept if b in limits and after.get(b, 0) > limits[b]),
                  key=lambda t: (-t[1], t[0]))
    if not over:
        tight = max((b for b in kept if b in limits), key=lambda b: (after.get(b, 0) / max(limits[b], 1), -b),
                    default=None)
        where = "" if tight is None else (f" (the fullest, broker {tight}, would reach "
                                          f"{human(after.get(tight, 0))} of its {human(limits[tight])} limit)")
        return ("no least-movement placement keeps every receiving broker under its disk limit "
                f"{capacity.threshold_pct:g} %{where}; add capacity, raise the threshold, or decommission fewer brokers")
    parts = []
    for b, excess in over[:5]:
        cap = capacity.capacity(b) or 0
        parts.append(f"broker {b}{_rack_text(racks, b)} would hold {human(after.get(b, 0))} = "
                     f"{100.0 * after.get(b, 0) / cap:.0f} % of {human(cap)}, {human(excess)} over the "
                     f"{capacity.threshold_pct:g} % threshold")
    more = f" (and {len(over) - 5} more)" if len(over) > 5 else ""
    fixes = []
    for rack in sorted({racks.get(b, "") for b, _ in over if not racks.get(b, "\0").startswith("\0")}):
        members = [b for b in kept if racks.get(b) == rack]
        lims = [limits[b] for b in members if b in limits]
        total = sum(after.get(b, 0) for b in members)
        if lims:
            need = math.ceil(total / (sum(lims) / len(lims)))
            gone = [b for b in removed if racks.get(b) == rack]
            fixes.append(f"rack {rack} would need {need} broker(s) of this capacity (it keeps {len(members)}"
                         + (f"; {', '.join(map(str, gone))} leave it" if gone else "") + ")")
    for b, excess in over[:3]:
        fixes.append(f"{human(excess)} more usable disk on broker {b}")
    return ("the least-movement plan would overfill " + "; ".join(parts) + more + ". What would fit: "
            + ", or ".join(fixes) + "; or keep a broker of that rack, or raise the threshold")


def _rack_text(racks: Mapping[int, str], b: int) -> str:
    r = racks.get(b)
    return "" if r is None or r.startswith("\0") else f" (rack {r})"


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def counted(n: int, noun: str) -> str:
    """``1 broker``, ``2 brokers``: a count with its noun."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def brokers_named(ids: Sequence[int]) -> str:
    """``broker 5``, ``brokers 4, 5``: broker ids, never to be read as a count."""
    return ("broker " if len(ids) == 1 else "brokers ") + ", ".join(map(str, sorted(ids)))


def _growth_causes(d: BrokerDisk, by_broker: Mapping[int, BrokerDisk], racks_before: Mapping[int, str],
                   removed: Sequence[int], received: Mapping[int, int]) -> list[str]:
    """Why ``d`` grows, each cause with its numbers: the rack constraint (its rack loses brokers
    and the kept ones of the rack grow on average), under-loaded before (it held well under its
    peers' mean and the plan evens loads), capacity (peers at their disk limit took no more);
    else least movement with the count of replicas it receives."""
    rack = racks_before.get(d.broker)
    racked = rack is not None and not rack.startswith("\0")
    gone = set(removed)
    group = [x for x in by_broker.values() if x.broker not in gone
             and (not racked or racks_before.get(x.broker) == rack)]
    peers = [x for x in group if x.broker != d.broker]
    where = f"of rack {rack}" if racked else "kept"
    causes = []
    leaving = [b for b in removed if racked and racks_before.get(b) == rack]
    group_before, group_after = _mean([x.before for x in group]), _mean([x.after for x in group])
    if leaving and group_before > 0 and group_after > group_before * GROWTH_FACTOR:
        freed = sum(by_broker[b].before for b in leaving if b in by_broker)
        kept = "the kept broker of that rack takes" if len(group) == 1 else "the kept brokers of that rack take"
        grows = "it grows" if len(group) == 1 else "their mean grows"
        causes.append(f"rack {rack} keeps {counted(len(group), 'broker')} while {brokers_named(leaving)} "
                      f"{'leaves' if len(leaving) == 1 else 'leave'} it, and rack-aware placement keeps each "
                      f"partition's replica in its rack, so {kept} those replicas ({human(freed)}): {grows} "
                      f"{group_after / group_before:.1f}x ({human(group_before)} -> {human(group_after)})")
    peers_before = _mean([x.before for x in peers])
    if peers and d.before * GROWTH_FACTOR < peers_before:
        causes.append(f"it was under-loaded: {human(d.before)} before against a mean of {human(peers_before)} on "
                      f"the {len(peers)} other broker(s) {where}, and the plan evens the load, so it ends near "
                      f"their mean after ({human(_mean([x.after for x in peers]))})")
    full = [x.broker for x in peers if x.limit is not None and x.before < x.after and x.peak >= 0.99 * x.limit]
    if full:
        causes.append(f"capacity: broker(s) {', '.join(map(str, full))} {where} reach their disk limit, so it "
                      "takes what they could not")
    if not causes:
        growth = f"{_mean([x.after for x in peers]) / peers_before:.1f}x" if peers_before > 0 else "-"
        causes.append(f"least movement: it receives {received.get(d.broker, 0)} new replica(s) and only replicas "
                      f"that must move do; the other broker(s) {where} grow {growth} on average")
    return causes


def growth_notes(profile: Sequence[BrokerDisk], racks_before: Mapping[int, str], removed: Sequence[int],
                 received: Mapping[int, int]) -> list[str]:
    """A sentence for every broker whose bytes grow more than :data:`GROWTH_FACTOR`, with its
    actual causes and their numbers (:func:`_growth_causes`)."""
    by_broker = {d.broker: d for d in profile}
    notes = []
    for d in profile:
        if d.before <= 0 or d.after <= d.before * GROWTH_FACTOR:
            continue
        head = f"Broker {d.broker} grows {d.after / d.before:.1f}x ({human(d.before)} -> {human(d.after)})"
        why = "; ".join(_growth_causes(d, by_broker, racks_before, removed, received))
        cap = f"; {d.pct(d.after)} % of its capacity after" if d.capacity else "; its capacity is unknown"
        notes.append(f"{head}: {why}{cap}.")
    return notes


def plan_disk(before: Mapping[int, int], brokers: Sequence[int], removed: Sequence[int],
              racks: Mapping[int, str], waves: Sequence[Wave], capacity: DiskCapacity | None,
              sized: bool, wave_limits: WaveLimits) -> tuple[list[Wave], dict]:
    """The waves in a disk-safe order and the plan summary's ``disk`` section.

    Without sizes nothing can be checked (said so); without capacity the per-broker bytes and
    growth notes are still given, with "capacity unknown". With both, waves are ordered
    (:func:`order_waves`, refusing when no order fits) and every receiving broker's peak is
    checked against its limit.
    """
    limits = capacity.limits(list(brokers)) if capacity is not None and sized else {}
    ordered = order_waves(waves, before, limits, wave_limits) if limits else list(waves)
    profile, received = _disk_profile(ordered, before, capacity, brokers)
    if not sized:
        status = "partition sizes unknown: disk usage during and after the move not checked"
    elif capacity is None:
        status = "capacity unknown: disk usage after the move not checked"
    else:
        unknown = [d.broker for d in profile if d.capacity is None and d.broker not in removed]
        status = ("checked against capacity" if not unknown else
                  f"checked against capacity; capacity unknown for broker(s) {', '.join(map(str, unknown))}")
    known = [d for d in profile if d.capacity and d.broker not in removed]
    worst = max(known, key=lambda d: (d.peak / d.capacity, -d.broker), default=None)
    already = [d.broker for d in known if d.limit is not None and d.before > d.limit]
    return ordered, {
        "checked": bool(limits),
        "status": status,
        "threshold_pct": capacity.threshold_pct if capacity is not None else None,
        "worst_broker": worst.broker if worst else None,
        "worst_peak_pct": worst.pct(worst.peak) if worst else None,
        "worst_after_pct": max((d.pct(d.after) for d in known), default=None),
        "over_before": already,
        "brokers": {str(d.broker): {"capacity": d.capacity, "limit": d.limit, "before": d.before, "peak": d.peak,
                                    "peak_wave": d.peak_wave, "after": d.after, "pct_before": d.pct(d.before),
                                    "pct_peak": d.pct(d.peak), "pct_after": d.pct(d.after)} for d in profile},
        "growth_notes": growth_notes(profile, racks, removed, received) if sized else [],
    }
