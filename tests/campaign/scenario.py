"""What one campaign run is, drawn from its seed alone: cluster shape, brokers to remove,
throttle, sizes, user throttles that exist before the run, and one fault with its timing.

``draw(seed)`` is pure: the same seed gives the same :class:`Scenario` on any machine (one
``random.Random(seed)``, drawn in a fixed order), so a failing run's scenario and fault timing
(relative to its wave) are reproduced by its seed; the threads' interleaving on a loaded machine is not. The
fault kind cycles with the seed (``FAULTS[seed % len(FAULTS)]``, 12 kinds), so consecutive seeds cover every kind
equally; everything else is random.
The expected end state of each fault is :data:`EXPECTED` (see :mod:`tests.campaign.runner`).

Failure: an unknown fault name given to ``draw(seed, fault=...)`` raises ``ValueError`` naming
the known ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

MiB = 1024 ** 2

#: fault -> the end state it calls for:
#: ``success`` — the run succeeds, the brokers are drained, nothing of ours is left;
#: ``failed_then_janitor`` — ``execute_waves`` fails, the report and notification name the cause
#: (destination not registered / max.message.bytes / deleted), the teardown keeps the
#: throttles while the wave is still listed, the operator's fix (in the runner) lets the wave end,
#: then the janitor removes our throttles and restores the user's; nothing is lost.
EXPECTED: dict[str, str] = {
    "none": "success",
    "kill_restart": "success",          # a destination broker killed (SIGKILL) then restarted
    "controller_move": "success",       # /controller deleted mid-wave
    "session_expiry": "success",        # a destination broker's ZooKeeper session expires
    "stall_resume": "success",          # a new replica stops fetching for a while, then resumes
    "zk_blip": "success",               # the runbook's ZooKeeper connections cut for 1.5-14 s (its
                                        # session expires past 10 s: a new session after the cut)
    "zk_outage_6": "success",           # the ZooKeeper server itself stopped for 6 s mid-wave, then
    "zk_outage_30": "success",          # restarted (30 s): every client, the emulator's too, reconnects
    "verify_restart": "success",        # a broker of the plan restarted as final_verify checks
    "kill_for_good": "failed_then_janitor",   # a destination broker killed and not restarted
    "fail_append": "failed_then_janitor",     # a new replica fails every append (max.message.bytes)
    "topic_deleted": "failed_then_janitor",   # a topic of the wave deleted while it moves
}
FAULTS: tuple[str, ...] = tuple(EXPECTED)


@dataclass(frozen=True)
class Scenario:
    """One run, all of it derived from ``seed``."""

    seed: int
    brokers: dict[int, str]                      # id -> rack
    topics: dict[str, dict[int, list[int]]]      # topic -> partition -> replicas
    sizes: dict[str, dict[int, int]]             # topic -> partition -> bytes
    removed: list[int]
    throttle: int                                # bytes/s
    max_moves_per_broker: int
    user_broker_throttle: int | None             # a broker whose rate the user set before the run
    user_topic_throttle: str | None              # a topic whose throttled-replica list the user set
    fault: str
    fault_wave: int                              # the fault lands while this wave runs (clamped)
    fault_delay: float                           # wall seconds after the wave appears
    fault_length: float                          # wall seconds a transient fault lasts
    speed: float = 2.0
    notes: dict = field(default_factory=dict)

    def describe(self) -> str:
        parts = sum(len(p) for p in self.topics.values())
        return (f"seed={self.seed} fault={self.fault} brokers={len(self.brokers)} "
                f"racks={len(set(self.brokers.values()))} topics={len(self.topics)} partitions={parts} "
                f"removed={self.removed} throttle={self.throttle // MiB}MiB/s wave={self.fault_wave} "
                f"delay={self.fault_delay:.2f}s length={self.fault_length:.2f}s")


def _assign(rng: random.Random, brokers: dict[int, str], partitions: int, rf: int) -> dict[int, list[int]]:
    """Rack-aware replica lists (distinct racks first), a random start per partition."""
    by_rack: dict[str, list[int]] = {}
    for b, r in sorted(brokers.items()):
        by_rack.setdefault(r, []).append(b)
    racks = sorted(by_rack)
    out = {}
    for p in range(partitions):
        start = rng.randrange(len(racks))
        order = racks[start:] + racks[:start]
        chosen: list[int] = []
        i = 0
        while len(chosen) < rf:
            rack = order[i % len(order)]
            free = [b for b in by_rack[rack] if b not in chosen]
            if free:
                chosen.append(rng.choice(free))
            i += 1
        out[p] = chosen
    return out


def draw(seed: int, fault: str | None = None) -> Scenario:
    """The scenario of ``seed`` (``fault`` forces the fault kind; the rest is still the seed's)."""
    if fault is not None and fault not in EXPECTED:
        raise ValueError(f"unknown fault {fault!r}: use one of {', '.join(FAULTS)}")
    rng = random.Random(seed)
    n = rng.randint(4, 7)
    nracks = rng.choice([2, 3]) if n >= 5 else 2
    brokers = {b: f"r{(b - 1) % nracks}" for b in range(1, n + 1)}
    ntopics = rng.randint(1, 3)
    topics, sizes = {}, {}
    for t in range(ntopics):
        rf = rng.choice([2, 3]) if nracks == 3 or n >= 6 else 2
        parts = rng.randint(2, 5)
        topics[f"topic{t}"] = _assign(rng, brokers, parts, rf)
        sizes[f"topic{t}"] = {p: rng.randint(4, 24) * MiB for p in range(parts)}
    holders = sorted({b for a in topics.values() for r in a.values() for b in r})
    nremove = 2 if n >= 6 and rng.random() < 0.3 else 1
    removed = sorted(rng.sample(holders, nremove))
    throttle = rng.randint(4, 8) * MiB
    chosen = fault if fault is not None else FAULTS[seed % len(FAULTS)]   # every kind equally often
    rng_fault = random.Random(seed * 7919 + 1)     # the fault's timing: independent of a forced kind
    kept = [b for b in brokers if b not in removed]
    wave, delay, length = rng_fault.randint(0, 2), rng_fault.uniform(0.0, 0.8), rng_fault.uniform(1.5, 6.0)
    blip = rng_fault.uniform(1.5, 14.0)     # past the runbook's 10 s session timeout about half the time
    return Scenario(
        seed=seed, brokers=brokers, topics=topics, sizes=sizes, removed=removed, throttle=throttle,
        max_moves_per_broker=rng.choice([1, 2]),
        user_broker_throttle=rng.choice(kept + [None]),
        user_topic_throttle=rng.choice(sorted(topics) + [None]),
        fault=chosen, fault_wave=wave, fault_delay=delay,
        fault_length={"zk_blip": blip, "zk_outage_6": 6.0, "zk_outage_30": 30.0}.get(chosen, length))
