"""The replication model's plan done the straightforward way: the reference for the incremental one.

:class:`FullReplan` stands in for :class:`kafka_sim.replication_plan.ReplicationPlan` (``model.plan =
FullReplan(model)``): on any change it derives every copying flow again, shares out every rate
with the plain progressive filling (:func:`kafka_sim.maxmin.allocate`, one rate per flow),
computes every finish time, and brings every follower's bytes forward eagerly whenever time has
passed — what the model did on every event before issue 28 made it incremental. Test support
only: O(every flow) per event.
"""

from __future__ import annotations

import math

from kafka_sim.maxmin import Flow, allocate
from kafka_sim.replication import PartitionData, ReplicationModel
from kafka_zk.codecs import TopicPartition

_EPS = 1e-6


class FullReplan:
    def __init__(self, model: ReplicationModel) -> None:
        self.m = model
        self._dirty = True
        self._flows: list[Flow] = []
        self._rates: list[float] = []
        self._finish: list[float] = []
        self._fill = math.inf
        self._t = model.now

    def touch(self, tp: TopicPartition | None) -> None:
        self._dirty = True

    def touch_disks(self) -> None:
        self._dirty = True

    def changed(self) -> None:
        self._dirty = True

    def caps_changed(self) -> None:
        self._dirty = True

    def starts_changed(self) -> None:
        self._dirty = True

    def pending(self) -> bool:
        return self._dirty

    def drop(self, tp: TopicPartition) -> None:
        self._catch_up()
        self._dirty = True

    def held(self, tp: TopicPartition, pd: PartitionData, r: int) -> float:
        self._catch_up()
        return pd.have[r]

    def sync(self, tp: TopicPartition) -> None:
        self._catch_up()

    def sync_all(self) -> None:
        self._catch_up()

    def _catch_up(self) -> None:
        """Every flow's bytes brought from the last time to now at its rate (the old ``_apply``)."""
        m = self.m
        dt = m.now - self._t
        if dt > 0:
            for f, rate in zip(self._flows, self._rates):
                pd = m.parts.get(f.tp)
                if rate > 0 and pd is not None and f.follower in pd.have:
                    pd.have[f.follower] = min(pd.have[f.follower] + rate * dt, m.size(f.tp, m.now))
        self._t = max(self._t, m.now)

    def _replan(self) -> None:
        if not self._dirty:
            return
        self._catch_up()
        m = self.m
        used = m.disks_used() if m.disk else {}
        full = m.full_disks(used) if m.disk else set()
        self._flows = [f for tp in sorted(m._copying) for f in m.flows_of(tp, full)]
        self._rates = allocate(self._flows, m.caps({k for f in self._flows for k in f.keys}))
        self._finish = []
        for f, rate in zip(self._flows, self._rates):
            pd = m.parts[f.tp]
            remaining = m.size(f.tp) - pd.have[f.follower]
            gain = rate - (m.produce_rate if m._grows(pd) else 0.0)
            self._finish.append(m.now if remaining <= _EPS else m.now + remaining / gain if gain > 0 else math.inf)
        inflow: dict[int, float] = {}
        for f, rate in zip(self._flows, self._rates):
            if f.follower in m.disk and rate > 0:
                inflow[f.follower] = inflow.get(f.follower, 0.0) + rate
        self._fill = min((m.now + max(0.0, m.disk[b] - used[b]) / rate for b, rate in inflow.items()),
                         default=math.inf)
        self._dirty = False

    def flows(self) -> list[Flow]:
        self._replan()
        return list(self._flows)

    def rates(self) -> dict[tuple[TopicPartition, int], float]:
        self._replan()
        return {(f.tp, f.follower): r for f, r in zip(self._flows, self._rates)}

    def next_event(self) -> float:
        self._replan()
        return min(min(self._finish, default=math.inf), self._fill, min(self.m.starts.values(), default=math.inf))

    def due(self, end: float) -> list[Flow]:
        self._catch_up()
        m = self.m
        return [f for f, done in zip(self._flows, self._finish)
                if done <= end or m.size(f.tp, end) - m.parts[f.tp].have[f.follower]
                <= max(_EPS, 1e-9 * m.size(f.tp, end))]


def reference_model(network_rate: float, produce_rate: float = 0.0, fetch_start: float = 0.0) -> ReplicationModel:
    """A :class:`ReplicationModel` planned by :class:`FullReplan`."""
    m = ReplicationModel(network_rate, produce_rate, fetch_start)
    m.plan = FullReplan(m)  # type: ignore[assignment]
    return m
