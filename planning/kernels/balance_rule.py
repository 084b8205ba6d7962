"""The decommission balance rule, in one place: no new replica sits on a broker holding two
replicas more than a broker that could take it.

A broker *could take* a new replica when it does not already hold the partition, the rack rule
allows it (a replica whose broker shares a rack with one of the partition's other replicas may go
anywhere; one that does not, only to a rack none of them is in), it holds at least two replicas
fewer than the replica's broker, and its disk has room. The validator (:mod:`.validate`) refuses
plans that break the rule; the decommission kernel's repairs (:mod:`.decommission`: relocations,
chains and byte swaps) keep it. Pure; no failure of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from planning.kernels.loads import rack_of


@dataclass(frozen=True, slots=True)
class NewReplica:
    """One replica in a partition's target, seen from it: the brokers of the partition's other
    replicas, their racks, and whether the replica's own broker is in one of those racks."""

    others: frozenset[int]
    racks_used: frozenset[str]
    holder_shares_rack: bool

    @classmethod
    def at(cls, target: Sequence[int], i: int, racks: Mapping[int, str]) -> NewReplica:
        """The replica at position ``i`` of ``target``."""
        others = frozenset(x for j, x in enumerate(target) if j != i)
        used = frozenset(rack_of(racks, o) for o in others)
        return cls(others, used, rack_of(racks, target[i]) in used)

    def may_move_to(self, broker: int, racks: Mapping[int, str]) -> bool:
        """Whether ``broker`` could hold this replica instead: not a holder of the partition, and
        the rack rule allows it."""
        return broker not in self.others and (self.holder_shares_rack or rack_of(racks, broker) not in self.racks_used)


def lower_taker(replica: NewReplica, holder_count: int, candidates: Iterable[int], counts: Mapping[int, int],
                racks: Mapping[int, str], has_room: Callable[[int], bool]) -> int | None:
    """The first of ``candidates`` that could take ``replica`` from a broker holding
    ``holder_count`` replicas (module docstring), or None: then the rule holds for it."""
    for c in candidates:
        if counts.get(c, 0) < holder_count - 1 and replica.may_move_to(c, racks) and has_room(c):
            return c
    return None
