"""Leaders and ISRs as a snapshot found them, written by the emulated controller (a seeded copy).

A cluster that has lived does not lead from its preferred replicas: a broker restarted with no
election since leaves its partitions led by the next replica in the ISR, and a broker that is
down is in no ISR. New replicas fetch from the partition's leader, so who leads decides which
broker's network and ``leader.replication.throttled.rate`` a move uses (kafka_sim/replication.py):
a copy that led from the preferred replicas predicted waves up to 25 % short (issue 38).

:func:`restore_states` has the controller write each partition's state to the leader and ISR
given, as its own elections would have left them: one conditional write per partition (leader
epoch + 1, what a 2.4 controller's leader change writes) and LeaderAndIsr to the brokers (the
model's views). A replica left out of the ISR on a live broker holds the leader's log (how far
behind it was is not in a snapshot) and so rejoins the ISR as soon as it fetches.

Failure: nothing is raised for a state that cannot be had here — a leader not live or not a
replica, an ISR without its leader — it is skipped, counted in the result, and the controller's
own choice stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.controller import Controller


@dataclass(frozen=True)
class Restored:
    """What :func:`restore_states` did: states written, already as given, and not possible."""

    written: int
    unchanged: int
    skipped: tuple[TopicPartition, ...]


def wanted_state(replicas: Sequence[int], live: set[int], leader: int, isr: Sequence[int]
                 ) -> tuple[int, tuple[int, ...]] | None:
    """The (leader, ISR) to write for a partition with ``replicas``, or None when it cannot be had:
    the leader must be a live replica and in the ISR; the ISR keeps its order, live replicas only."""
    kept = tuple(b for b in isr if b in live and b in replicas)
    if leader not in live or leader not in replicas or leader not in kept:
        return None
    return leader, kept


def restore_states(ctrl: "Controller", states: Mapping[TopicPartition, tuple[int, Sequence[int]]]) -> Restored:
    """On the engine thread: write every partition of ``states`` (tp → (leader, ISR)) that differs."""
    live = ctrl.live_set()
    todo, unchanged, skipped = {}, 0, []
    for tp, (leader, isr) in sorted(states.items()):
        cached = ctrl.states.get(tp)
        want = wanted_state(ctrl.replicas(tp), live, leader, isr) if ctrl.exists(tp) else None
        if want is None or cached is None:
            skipped.append(tp)
        elif (cached[0].leader, tuple(cached[0].isr)) == want:
            unchanged += 1
        else:
            todo[tp] = want
    done = ctrl.update_states((tp, lambda st, want=want: want) for tp, want in todo.items())
    skipped.extend(tp for tp in todo if tp not in done)
    return Restored(len(done), unchanged, tuple(sorted(skipped)))
