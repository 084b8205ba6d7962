"""The reassignment phases of one partition (docs/zookeeper.md §2.7.3) and their legal transitions.

``IDLE`` → ``UPDATED`` (U: topic znode holds RS/ARS/RRS) → ``CATCHING_UP`` (A: epoch bump, adding
replicas started) → ``COMPLETING`` (B: target ⊆ ISR) → ``IDLE``. A pure re-order or a no-op goes
``UPDATED`` → ``COMPLETING`` directly; a new target during catch-up goes back to ``UPDATED``;
a failover or a returning target broker re-runs A (``CATCHING_UP`` → ``CATCHING_UP``); a topic
deleted under a running reassignment ends it (``ABANDONED``, kept as "being reassigned" until
the controller changes, as observed on 2.4.1).

:func:`advance` raises :class:`IllegalTransition` naming the current, target and allowed
phases; time is passed in, never read.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Phase(enum.Enum):
    IDLE = "idle"
    UPDATED = "updated"
    CATCHING_UP = "catching_up"
    COMPLETING = "completing"
    ABANDONED = "abandoned"


ALLOWED: dict[Phase, frozenset[Phase]] = {
    Phase.IDLE: frozenset({Phase.UPDATED}),
    Phase.UPDATED: frozenset({Phase.CATCHING_UP, Phase.COMPLETING, Phase.UPDATED, Phase.ABANDONED}),
    Phase.CATCHING_UP: frozenset({Phase.CATCHING_UP, Phase.COMPLETING, Phase.UPDATED,
                                  Phase.ABANDONED}),
    Phase.COMPLETING: frozenset({Phase.IDLE, Phase.UPDATED, Phase.CATCHING_UP}),
    Phase.ABANDONED: frozenset({Phase.UPDATED, Phase.IDLE}),
}


class IllegalTransition(RuntimeError):
    """A reassignment phase change that §2.7.3 does not allow."""


@dataclass
class PartitionReassignment:
    """Phase of one partition's reassignment and when it entered it (simulated seconds)."""

    phase: Phase = Phase.IDLE
    since: float = 0.0
    started_at: float | None = None


def advance(r: PartitionReassignment, to: Phase, now: float) -> PartitionReassignment:
    """Move ``r`` to phase ``to`` at simulated time ``now``."""
    allowed = ALLOWED[r.phase]
    if to not in allowed:
        raise IllegalTransition(f"reassignment phase {r.phase.value} -> {to.value} is not allowed; "
                                f"allowed from {r.phase.value}: "
                                f"{sorted(p.value for p in allowed)}")
    if r.phase in (Phase.IDLE, Phase.ABANDONED) and to is Phase.UPDATED:
        r.started_at = now
    r.phase, r.since = to, now
    return r
