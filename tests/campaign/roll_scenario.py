"""What one rolling_restart campaign run is, drawn from its seed alone: cluster shape, topics, the
broker the fault lands on, and the fault.

``draw(seed)`` is pure (one ``random.Random(seed)``, drawn in a fixed order): a failing run's
scenario is reproduced by its seed; the threads' interleaving on a loaded machine is not. The
fault kind cycles with the seed (``FAULTS[seed % len(FAULTS)]``), so consecutive seeds cover every
kind equally; everything else is random. The end state each fault calls for is :data:`EXPECTED`
(see :mod:`tests.campaign.roll_runner`).

Failure: an unknown fault name given to ``draw(seed, fault=...)`` raises ``ValueError`` naming
the known ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.campaign.scenario import _assign

MiB = 1024 ** 2

#: fault -> the end state it calls for:
#: ``success`` — the roll ends with every broker restarted once, every preferred leadership back;
#: ``stopped_then_resumed`` — the roll stops before the next broker, the batch, the report and the
#: notification naming the broker and the registration gate; once the operator started the broker,
#: the roll resumed (its task cleared) finishes without restarting it again.
EXPECTED: dict[str, str] = {
    "none": "success",
    "zk_outage_6": "success",           # the ZooKeeper server stopped 6 s while the broker is down for its restart
    "zk_outage_30": "success",          # ... 30 s (past the 10 s session timeout of every client)
    "task_killed": "success",           # the process running the roll SIGKILLed (its process group) while the
                                        # broker restarts; the roll task cleared and run again
    "broker_not_back": "stopped_then_resumed",   # its action stops the broker and it never starts again
}
FAULTS: tuple[str, ...] = tuple(EXPECTED)


@dataclass(frozen=True)
class RollScenario:
    """One roll run, all of it derived from ``seed``."""

    seed: int
    brokers: dict[int, str]                      # id -> rack
    topics: dict[str, dict[int, list[int]]]      # topic -> partition -> replicas
    sizes: dict[str, dict[int, int]]             # topic -> partition -> bytes
    min_isr: dict[str, int]                      # topic -> min.insync.replicas (set when > 1)
    fault: str
    fault_position: int                          # the fault lands on the roll's broker at this position
    speed: float = 20.0

    def describe(self) -> str:
        parts = sum(len(p) for p in self.topics.values())
        return (f"seed={self.seed} fault={self.fault} brokers={len(self.brokers)} "
                f"racks={len(set(self.brokers.values()))} topics={len(self.topics)} partitions={parts} "
                f"position={self.fault_position}")


def draw(seed: int, fault: str | None = None) -> RollScenario:
    """The scenario of ``seed`` (``fault`` forces the fault kind; the rest is still the seed's)."""
    if fault is not None and fault not in EXPECTED:
        raise ValueError(f"unknown fault {fault!r}: use one of {', '.join(FAULTS)}")
    rng = random.Random(seed)
    n = rng.randint(3, 5)
    nracks = rng.choice([2, 3]) if n >= 4 else 3
    brokers = {b: f"r{(b - 1) % nracks}" for b in range(1, n + 1)}
    topics, sizes, min_isr = {}, {}, {}
    for t in range(rng.randint(1, 3)):
        rf = rng.choice([2, 3])
        parts = rng.randint(2, 6)
        name = f"topic{t}"
        topics[name] = _assign(rng, brokers, parts, rf)
        sizes[name] = {p: rng.randint(1, 8) * MiB for p in range(parts)}
        if rf == 3 and rng.random() < 0.5:
            min_isr[name] = 2                   # one broker down leaves 2 in sync: the gate lets it go
    chosen = fault if fault is not None else FAULTS[seed % len(FAULTS)]
    position = random.Random(seed * 7919 + 1).randrange(n)     # independent of a forced kind
    return RollScenario(seed, brokers, topics, sizes, min_isr, chosen, position)
