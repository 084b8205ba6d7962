"""Partition data and its replication, on simulated time passed in (docs/zookeeper.md §3).

What brokers know about each partition (replicas, leader, ISR: what LeaderAndIsr told them) is
held here as a *view*; the controller and the leaders update it after each ZooKeeper write.
Every partition has a size (the leader's log); a follower that is live, not in the ISR and not
stalled copies from a live leader. Rates are shared max-min fairly (progressive filling,
kafka_sim/maxmin.py) over these resources: each broker's network out and in
(``network_rate``), and for throttled replicas the leader broker's
``leader.replication.throttled.rate`` and the follower broker's
``follower.replication.throttled.rate``. A replica is throttled on the leader side when
``p:leader`` is in the topic's leader list (or ``*``), on the follower side when ``p:follower``
is in the follower list; in-sync replicas are never throttled.

A replica new to a partition's replica set (a reassignment's adding replica) starts fetching
``fetch_start`` simulated seconds after the view names it (its broker creating the log and
starting a fetcher: ~0.5 s on Kafka 2.4.1, kafka_sim/spec.py); that start is an event like a
catch-up, so results stay exact. A restarted broker's out-of-sync replicas start fetching
``rejoin_start`` after it is up again (registered: the controller's LeaderAndIsr, the log truncated
to the leader's epoch, the fetcher's first fetch; ~1.65 s on 2.4.1), then copy what they missed;
the leader adds each to the ISR at its catch-up.

Disks (optional, :meth:`ReplicationModel.set_disk_capacity`): a broker's disk holds every replica
it hosts (the leader's log for in-sync replicas, the copied bytes for a follower catching up).
A broker whose disk is full stops fetching: its catching-up replicas stop growing (as a Kafka
follower whose log directory is out of space stops appending) until space is freed (a replica
removed, the capacity raised). The moment a disk fills is an event like a catch-up, so results
stay exact. Produce traffic to in-sync replicas is not limited by the disk (simplification).

:meth:`ReplicationModel.advance` moves from one time to another exactly (piecewise constant
rates), returning each catch-up with the simulated time it happened, so results do not depend
on how often it is called. Nothing here touches ZooKeeper or reads a clock.

The plan is incremental (kafka_sim/replication_plan.py): a change re-derives the flows of the
partitions it touched only; the rates are shared out per class of flows using the same resources
(:func:`kafka_sim.maxmin.allocate_classes`); each class keeps its progress and a heap of its
members, so a rate change re-times the class, not each of its flows; a follower's bytes are
brought up to date when read or when its partition changes. So an event costs O(classes + touched
flows · log) rather than O(every copying flow), and a wave of thousands of concurrent moves is no
longer quadratic (issue 28; BENCHMARKS.md "Rehearsals").
``tests/kafka_sim/test_replication_incremental.py`` pins it against the straightforward full
re-plan (``tests/kafka_sim/replication_reference.py``) over random flow sets and events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping

from kafka_sim.maxmin import Flow, allocate  # noqa: F401 - re-exported: the model's rule, for callers
from kafka_sim.replication_plan import ReplicationPlan
from kafka_zk.codecs import TopicPartition

Pairs = frozenset[tuple[int, int]] | Literal["*"]
_EPS = 1e-6


@dataclass
class PartitionData:
    """One partition as brokers see it, plus the bytes each replica holds."""

    replicas: tuple[int, ...] = ()
    leader: int = -1
    isr: tuple[int, ...] = ()
    size: float = 0.0           # leader's log size at time ``t``
    t: float = 0.0
    have: dict[int, float] = field(default_factory=dict)   # out-of-sync replicas' bytes (see ReplicationPlan.held)
    caught: set[int] = field(default_factory=set)          # caught up, ISR join pending


@dataclass(frozen=True)
class CatchUp:
    """Follower ``broker`` of ``tp`` reached the leader's log end at simulated ``time``."""

    time: float
    tp: TopicPartition
    broker: int
    leader: int


class ReplicationModel:
    """All partitions' data and views; brokers' liveness, rates and throttle views.

    ``PartitionData.have`` of a copying follower is its bytes when its flow was last synced;
    :meth:`replica_bytes` (and every method here) reads it brought up to now."""

    def __init__(self, network_rate: float, produce_rate: float = 0.0, fetch_start: float = 0.0,
                 rejoin_start: float = 0.0) -> None:
        self.default_network_rate = float(network_rate)
        self.fetch_start = float(fetch_start)
        self.rejoin_start = float(rejoin_start)
        self.starts: dict[tuple[TopicPartition, int], float] = {}   # new replica -> when it first fetches
        self.produce_rate = float(produce_rate)
        self.parts: dict[TopicPartition, PartitionData] = {}
        self.live: set[int] = set()
        self.network: dict[int, float] = {}
        self.leader_rate: dict[int, float] = {}     # broker -> leader throttle (absent: unlimited)
        self.follower_rate: dict[int, float] = {}
        self.throttles: dict[str, tuple[Pairs, Pairs]] = {}  # topic -> (leader list, follower list)
        self.stalled: set[tuple[TopicPartition, int]] = set()
        self.disk: dict[int, float] = {}        # broker -> disk capacity in bytes (absent: unlimited)
        self._copying: set[TopicPartition] = set()     # partitions with an out-of-sync replica
        self.now = 0.0
        self.version = 0        # bumped on every change of views, sizes or rates
        self.plan = ReplicationPlan(self)

    # ----------------------------------------------------------------------------- mutation
    def _dirty(self, tp: TopicPartition | None = None) -> None:
        """``tp``'s flows (None: every partition's) must be derived again before time passes."""
        self.plan.touch(tp)
        self.version += 1

    def _grows(self, pd: PartitionData) -> bool:
        return self.produce_rate > 0 and pd.leader >= 0 and pd.leader in self.live

    def _settle(self, pd: PartitionData, t: float) -> None:
        if self._grows(pd) and t > pd.t:
            pd.size += self.produce_rate * (t - pd.t)
        pd.t = max(pd.t, t)

    def size(self, tp: TopicPartition, t: float | None = None) -> float:
        pd = self.parts[tp]
        t = self.now if t is None else t
        extra = self.produce_rate * (t - pd.t) if self._grows(pd) and t > pd.t else 0.0
        return pd.size + extra

    def set_size(self, tp: TopicPartition, nbytes: float) -> None:
        pd = self.parts.setdefault(tp, PartitionData(t=self.now))
        self.plan.sync(tp)
        self._settle(pd, self.now)
        pd.size = float(nbytes)
        self._dirty(tp)

    def ensure(self, tp: TopicPartition, size: float = 0.0) -> PartitionData:
        pd = self.parts.get(tp)
        if pd is None:
            pd = self.parts[tp] = PartitionData(size=float(size), t=self.now)
        return pd

    def set_view(self, tp: TopicPartition, replicas: Iterable[int] | None = None,
                 leader: int | None = None, isr: Iterable[int] | None = None) -> None:
        """What LeaderAndIsr (or a leader's own ISR change) tells the brokers about ``tp``."""
        pd = self.ensure(tp)
        self.plan.sync(tp)
        self._settle(pd, self.now)
        new_replicas = pd.replicas if replicas is None else tuple(replicas)
        new_leader = pd.leader if leader is None else leader
        new_isr = pd.isr if isr is None else tuple(isr)
        if (new_replicas, new_leader, new_isr) == (pd.replicas, pd.leader, pd.isr) and self._settled(tp, pd):
            return       # nothing would change: the flows, rates and finish times stand (no re-plan)
        size = pd.size
        in_sync_before = set(pd.isr) | ({pd.leader} if pd.leader >= 0 else set())
        hosted_before = set(pd.replicas)
        for r in in_sync_before - set(new_isr) - {new_leader}:
            pd.have[r] = size                       # leaves the ISR holding everything so far
        if new_leader >= 0 and new_leader not in in_sync_before and new_leader in pd.have:
            pd.size = size = pd.have[new_leader]    # unclean: the new leader's log is the log
        for r in new_replicas:
            if r not in new_isr and r != new_leader and r not in pd.have:
                pd.have[r] = size if r in in_sync_before else 0.0
                if self.fetch_start > 0 and hosted_before and r not in hosted_before:
                    self.starts[(tp, r)] = self.now + self.fetch_start
                    self.plan.starts_changed()
        for r in list(pd.have):
            if r not in new_replicas or r in new_isr or r == new_leader:
                del pd.have[r]
                if self.starts.pop((tp, r), None) is not None:
                    self.plan.starts_changed()
        # a caught-up follower waiting to join re-syncs with a new leader (a new catch-up event)
        pd.caught = {r for r in pd.caught if r in pd.have} if new_leader == pd.leader else set()
        pd.replicas, pd.leader, pd.isr = new_replicas, new_leader, new_isr
        if pd.have:
            self._copying.add(tp)
        else:
            self._copying.discard(tp)
        self._dirty(tp)

    def _settled(self, tp: TopicPartition, pd: PartitionData) -> bool:
        """Whether :meth:`set_view` with ``pd``'s own views would leave ``pd`` as it is: every
        out-of-sync replica has its bytes, no one else has, and the copying set agrees."""
        out_of_sync = {r for r in pd.replicas if r not in pd.isr and r != pd.leader}
        return pd.have.keys() == out_of_sync and pd.caught <= out_of_sync \
            and bool(pd.have) == (tp in self._copying)

    def remove(self, tp: TopicPartition) -> None:
        self.plan.drop(tp)
        self.parts.pop(tp, None)
        for key in [k for k in self.starts if k[0] == tp]:
            del self.starts[key]
            self.plan.starts_changed()
        self._copying.discard(tp)
        self.stalled = {s for s in self.stalled if s[0] != tp}
        self.version += 1

    def broker_up(self, broker: int) -> None:
        """``broker`` runs again: its out-of-sync replicas fetch from ``rejoin_start`` on."""
        self.plan.sync_all()
        for tp, pd in self.parts.items():
            if pd.leader == broker:
                self._settle(pd, self.now)
            elif self.rejoin_start > 0 and broker in pd.have:
                at = self.now + self.rejoin_start
                self.starts[(tp, broker)] = max(at, self.starts.get((tp, broker), at))
                self.plan.starts_changed()
        self.live.add(broker)
        self._dirty()

    def broker_down(self, broker: int) -> None:
        self.plan.sync_all()
        for tp, pd in self.parts.items():
            if broker in pd.replicas:
                self._settle(pd, self.now)
                if broker in pd.isr and broker != pd.leader:
                    pd.have.setdefault(broker, pd.size)
                    self._copying.add(tp)
        self.live.discard(broker)
        self._dirty()

    def set_network_rate(self, broker: int, rate: float | None) -> None:
        if rate is None:
            self.network.pop(broker, None)
        else:
            self.network[broker] = float(rate)
        self.plan.caps_changed()
        self.version += 1

    def set_throttle_rates(self, broker: int, leader: float | None, follower: float | None) -> None:
        for table, value in ((self.leader_rate, leader), (self.follower_rate, follower)):
            if value is None:
                table.pop(broker, None)
            else:
                table[broker] = float(value)
        self.plan.caps_changed()
        self.version += 1

    def set_throttle_lists(self, topic: str, leader: Pairs, follower: Pairs) -> None:
        if not leader and not follower:
            self.throttles.pop(topic, None)
        else:
            self.throttles[topic] = (leader, follower)
        for tp in self._copying:
            if tp.topic == topic:
                self.plan.touch(tp)
        self.plan.changed()
        self.version += 1

    def set_stalled(self, tp: TopicPartition, broker: int, stalled: bool) -> None:
        if stalled:
            self.stalled.add((tp, broker))
        else:
            self.stalled.discard((tp, broker))
        self._dirty(tp)

    def set_disk_capacity(self, broker: int, nbytes: float | None) -> None:
        """Give ``broker`` a disk of ``nbytes`` (None: unlimited)."""
        if nbytes is None:
            self.disk.pop(broker, None)
        else:
            self.disk[broker] = float(nbytes)
        self._dirty()

    def disk_used(self, broker: int, t: float | None = None) -> float:
        """Bytes on ``broker``'s disk at time ``t`` (default: now): every replica it hosts (a
        copying follower's bytes as of now)."""
        t = self.now if t is None else t
        used = 0.0
        held = self.plan.held
        for tp, pd in self.parts.items():
            if broker in pd.replicas:
                used += held(tp, pd, broker) if broker in pd.have else self.size(tp, t)
        return used

    def disks_used(self) -> dict[int, float]:
        """Bytes on the disk of every broker that has a capacity, now (one pass over partitions)."""
        used = {b: 0.0 for b in self.disk}
        held = self.plan.held
        for tp, pd in self.parts.items():
            size = None
            for b in pd.replicas:
                if b in used:
                    if b in pd.have:
                        used[b] += held(tp, pd, b)
                    else:
                        size = self.size(tp) if size is None else size
                        used[b] += size
        return used

    def full_disks(self, used: Mapping[int, float] | None = None) -> set[int]:
        """Brokers whose disk is full (within a byte): they fetch nothing."""
        used = self.disks_used() if used is None else used
        return {b for b, cap in self.disk.items() if used[b] >= cap - 1.0}

    # ----------------------------------------------------------------------------- flows
    def flows_of(self, tp: TopicPartition, full: set[int]) -> list[Flow]:
        """The followers of ``tp`` copying now (given the brokers whose disk is ``full``)."""
        pd = self.parts.get(tp)
        if pd is None or not pd.have or pd.leader < 0 or pd.leader not in self.live:
            return []
        leader, live, stalled, starts = pd.leader, self.live, self.stalled, self.starts
        lists = self.throttles.get(tp.topic)
        out = []
        for r in sorted(pd.have):
            if r in pd.caught or r not in live or (tp, r) in stalled or r in full or (tp, r) in starts:
                continue
            if lists is None:
                keys: tuple[tuple[str, int], ...] = (("out", leader), ("in", r))
            else:
                lthr = lists[0] == "*" or (tp.partition, leader) in lists[0]
                fthr = lists[1] == "*" or (tp.partition, r) in lists[1]
                keys = (("out", leader), ("in", r)) + ((("lthr", leader),) if lthr else ()) \
                    + ((("fthr", r),) if fthr else ())
            out.append(Flow(tp, leader, r, keys))
        return out

    def caps(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], float]:
        """Each capped resource among ``keys`` and its rate (an absent throttle: unlimited)."""
        caps: dict[tuple[str, int], float] = {}
        for kind, b in keys:
            if kind in ("out", "in"):
                caps[(kind, b)] = self.network.get(b, self.default_network_rate)
            elif kind == "lthr" and b in self.leader_rate:
                caps[(kind, b)] = self.leader_rate[b]
            elif kind == "fthr" and b in self.follower_rate:
                caps[(kind, b)] = self.follower_rate[b]
        return caps

    def flows(self) -> list[Flow]:
        """Every copying flow now, in (partition, follower) order."""
        return self.plan.flows()

    def rates(self) -> dict[tuple[TopicPartition, int], float]:
        return self.plan.rates()

    def next_event_time(self) -> float | None:
        """Simulated time of the next catch-up, fetch start or full disk, or None when nothing is copying."""
        best = self.plan.next_event()
        return None if best == math.inf else best

    def advance(self, t: float) -> list[CatchUp]:
        """Move to simulated time ``t``; every catch-up on the way, in time order (and in
        (partition, follower) order at one time).

        When no time passes (``t`` not after now: the engine handling events back to back, its
        clock paused) and views changed since the last re-plan, the re-plan waits until time
        passes or the flows are asked for: a catch-up due at this instant (nothing left to copy)
        is then found with its time, this instant, before any later one."""
        if t <= self.now and self.plan.pending():
            return []
        events: list[CatchUp] = []
        while True:
            end = self.plan.next_event()
            if end > t:
                break
            self.now = max(self.now, end)
            for f in self.plan.due(end):
                pd = self.parts[f.tp]
                pd.have[f.follower] = self.size(f.tp, end)
                pd.caught.add(f.follower)
                events.append(CatchUp(end, f.tp, f.follower, f.leader))
                self.plan.touch(f.tp)
            started = [k for k, at in self.starts.items() if at <= end]
            for key in started:
                del self.starts[key]            # these replicas fetch from ``end`` on
                self.plan.touch(key[0])
            if started:
                self.plan.starts_changed()
            self.plan.touch_disks()             # a disk that fills at ``end`` stops its flows
            self.version += 1
        self.now = max(self.now, t)
        return events

    # ----------------------------------------------------------------------------- reading
    def replica_bytes(self, tp: TopicPartition, broker: int) -> float | None:
        """Bytes ``broker`` holds for ``tp`` (None if it hosts no replica)."""
        pd = self.parts.get(tp)
        if pd is None or broker not in pd.replicas:
            return None
        if broker in pd.have:
            return self.plan.held(tp, pd, broker)
        return self.size(tp)
