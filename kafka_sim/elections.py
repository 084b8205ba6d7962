"""Leader election strategies and ISR removal of docs/zookeeper.md §2.2, as pure functions.

Each function takes the assignment, the current leader/ISR and the live brokers and returns
the new ``(leader, isr)``, or ``None`` when the strategy fails (nothing is written then).
The caller bumps ``leader_epoch`` by one for every write it makes (§2.2).
"""

from __future__ import annotations

from typing import AbstractSet, Sequence

LeaderIsr = tuple[int, tuple[int, ...]]


def new_partition(replicas: Sequence[int], live: AbstractSet[int]) -> LeaderIsr | None:
    """Creation: leader = first live replica, ISR = live replicas in assignment order."""
    isr = tuple(r for r in replicas if r in live)
    return (isr[0], isr) if isr else None


def offline(replicas: Sequence[int], isr: Sequence[int], live: AbstractSet[int],
            unclean: bool = False) -> LeaderIsr | None:
    """Leader died / partition offline: first assigned replica live and in ISR; ISR filtered
    to live members (order kept). Unclean (if allowed): first live replica, ISR = [leader]."""
    live_isr = tuple(r for r in isr if r in live)
    for r in replicas:
        if r in live and r in isr:
            return r, live_isr
    if unclean:
        for r in replicas:
            if r in live:
                return r, (r,)
    return None


def reassign(target: Sequence[int], isr: Sequence[int], live: AbstractSet[int]) -> int | None:
    """Leader must move during reassignment completion: first target replica live and in ISR."""
    for r in target:
        if r in live and r in isr:
            return r
    return None


def preferred(replicas: Sequence[int], isr: Sequence[int], live: AbstractSet[int]) -> int | None:
    """Preferred election: the first assigned replica, only if it is live and in the ISR."""
    if replicas and replicas[0] in live and replicas[0] in isr:
        return replicas[0]
    return None


def controlled_shutdown(replicas: Sequence[int], isr: Sequence[int], live: AbstractSet[int],
                        shutting_down: AbstractSet[int]) -> LeaderIsr | None:
    """First assigned replica live, in ISR and not shutting down; ISR minus shutting down."""
    for r in replicas:
        if r in live and r in isr and r not in shutting_down:
            return r, tuple(i for i in isr if i not in shutting_down)
    return None


def remove_from_isr(leader: int, isr: Sequence[int], replica: int) -> LeaderIsr:
    """Replica goes offline / is removed: leader −1 if it led; ISR drops it unless it is the
    only member (then the ISR is left as it is)."""
    new_leader = -1 if leader == replica else leader
    new_isr = tuple(isr) if tuple(isr) == (replica,) else tuple(i for i in isr if i != replica)
    return new_leader, new_isr
