"""One class of copying flows (the same resource keys) and the caps their sharing uses.

Helpers of :mod:`kafka_sim.replication_plan`: :class:`FlowClass` is a class's progress (the bytes
each member copied since the class began, at the class's one rate) and its heap of members by a
fixed key; :func:`sharing_caps` derives the caps a max-min fill needs for a class's keys. Pure
data and arithmetic: nothing here fails on the model's valid state, reads a clock or touches
ZooKeeper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_sim.maxmin import Key, Keys
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.replication import ReplicationModel

FlowId = tuple[TopicPartition, int]


class FlowClass:
    """One class of flows (the same resource keys, so the same rate at every instant).

    ``progress(t)`` is the bytes each member copied since the class began: ``p`` at ``t0``, plus
    ``rate · (t − t0)`` — brought to a new ``t0`` when the rate changes. A member is kept on
    ``heap`` by its fixed *key* (its remaining bytes plus the class's progress, less the produce
    growth: see :meth:`kafka_sim.replication_plan.ReplicationPlan._key`), so the members' order of finishing never changes while they
    stay in the class; ``tok`` is the token of the class's entry on the plan's event heap."""

    __slots__ = ("rate", "p", "t0", "heap", "n", "tok", "follower")

    def __init__(self, rate: float, now: float, follower: int) -> None:
        self.rate = rate
        self.p = 0.0
        self.t0 = now
        self.heap: list[tuple[float, int, FlowId]] = []
        self.n = 0
        self.tok = -1
        self.follower = follower

    def progress(self, t: float) -> float:
        return self.p + self.rate * (t - self.t0) if t > self.t0 and self.rate else self.p


def sharing_caps(m: "ReplicationModel", keys: Keys, caps: dict[Key, float], seen: set[Key]) -> None:
    """Add to ``caps`` the caps of ``keys`` not yet in ``seen``: ``ReplicationModel.caps``, less a
    throttle no tighter than its broker's network rate. A flow is throttled on a broker's leader
    (follower) side only if it uses that broker's network out (in), so such a throttle is implied
    by the network key: dropping it leaves the feasible rates, hence the max-min fair ones, as they
    are, and halves the keys a fill goes through when throttles equal the network rate (as in a
    rehearsal)."""
    for kind, b in keys:
        if (kind, b) in seen:
            continue
        seen.add((kind, b))
        net = m.network.get(b, m.default_network_rate)
        if kind in ("out", "in"):
            caps[(kind, b)] = net
        else:
            limit = (m.leader_rate if kind == "lthr" else m.follower_rate).get(b)
            if limit is not None and limit < net:
                caps[(kind, b)] = limit
