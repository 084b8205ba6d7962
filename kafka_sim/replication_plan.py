"""The replication model's plan, kept up to date incrementally: flows, rates, finish times.

:class:`Plan` belongs to one :class:`kafka_sim.replication.ReplicationModel`. The model tells it
what changed — a partition's views (:meth:`Plan.touch`), every partition (``touch(None)``: a
broker up or down, a disk capacity), the caps (:meth:`Plan.caps_changed`), the fetch starts —
and the plan brings itself up to date lazily, before time next passes or when asked:

* the flows of the touched partitions only are derived again (``ReplicationModel.flows_of``);
* the rates are shared out max-min fairly per *class* (the resource keys a flow uses:
  ``kafka_sim.maxmin.allocate_classes``) when the classes' counts or the caps changed;
* a flow whose rate moved has its bytes brought up to now at its old rate, then a new finish
  time pushed on a heap (stale entries carry an old token and are skipped), so the next
  catch-up is the heap's top rather than a scan of every flow.

A copying follower's ``PartitionData.have`` is its bytes at ``since[flow]``; :meth:`Plan.held`
reads it at now (``have + rate · (now − since)``, at most the leader's size). Any change to a
partition's views or size first brings its flows' bytes to now (:meth:`Plan.sync`).

Results are those of the full re-plan (every flow, every event) to float rounding: a class's
rate recomputed within 1e-12 of its old one keeps the old one (no new finish times), and at an
event time the flows due within :data:`CATCH_SLACK_S` are checked with the full re-plan's rule
(nothing left to copy, within 1e-9 of the size). Nothing here reads a clock or touches ZooKeeper.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import TYPE_CHECKING

from kafka_sim.maxmin import Flow, Keys, allocate_classes
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.replication import PartitionData, ReplicationModel

FlowId = tuple[TopicPartition, int]
_EPS = 1e-6
#: at an event time, flows whose finish is this close after it are checked for "nothing left"
CATCH_SLACK_S = 1e-3
_SAME_RATE = 1e-12


class Plan:
    """Flows of the copying followers, their rates (per class) and a heap of finish times."""

    def __init__(self, model: "ReplicationModel") -> None:
        self.m = model
        self._flows_of: dict[TopicPartition, list[Flow]] = {}
        self._flow: dict[FlowId, Flow] = {}
        self._members: dict[Keys, set[FlowId]] = {}
        self._class_rate: dict[Keys, float] = {}
        self._rate: dict[FlowId, float] = {}
        self._since: dict[FlowId, float] = {}
        self._token: dict[FlowId, int] = {}
        self._heap: list[tuple[float, int, FlowId]] = []
        self._seq = itertools.count()
        self._stale: set[TopicPartition] = set()
        self._all = False
        self._realloc = False
        self._delta: dict[Keys, int] = {}      # flows each class gained (+) or lost (-) since the last sharing
        self._caps_moved = False
        self._starts_dirty = False
        self._pending = False
        self._full: set[int] = set()
        self._fill = math.inf
        self._next_start = math.inf
        self._list: list[Flow] | None = []

    # ----------------------------------------------------------------------------- told
    def touch(self, tp: TopicPartition | None) -> None:
        if tp is None:
            self._all = True
        else:
            self._stale.add(tp)
        self._pending = True

    def touch_disks(self) -> None:
        if self.m.disk or self._full:
            self._pending = True

    def caps_changed(self) -> None:
        self._caps_moved = self._realloc = self._pending = True

    def starts_changed(self) -> None:
        self._starts_dirty = self._pending = True

    def pending(self) -> bool:
        """Something changed since the plan was last brought up to date."""
        return self._pending

    def changed(self) -> None:
        """Something the plan reads changed (a re-plan checks the disks again, as the full one does)."""
        self._pending = True

    def drop(self, tp: TopicPartition) -> None:
        """``tp`` is gone: its flows leave the plan."""
        self._stale.discard(tp)
        self._pending = True
        old = self._flows_of.pop(tp, None)
        if old:
            for f in old:
                self._forget((tp, f.follower), f)
            self._realloc = self._pending = True
            self._list = None

    # ----------------------------------------------------------------------------- bytes
    def held(self, tp: TopicPartition, pd: "PartitionData", r: int) -> float:
        """Bytes follower ``r`` of ``tp`` holds now (its flow's progress since it was last synced)."""
        have = pd.have[r]
        rate = self._rate.get((tp, r))
        if not rate:
            return have
        dt = self.m.now - self._since[(tp, r)]
        if dt <= 0:
            return have
        return min(have + rate * dt, self.m.size(tp))

    def _sync_flow(self, fid: FlowId, pd: "PartitionData") -> None:
        if fid[1] in pd.have:
            pd.have[fid[1]] = self.held(fid[0], pd, fid[1])
        self._since[fid] = self.m.now

    def sync(self, tp: TopicPartition) -> None:
        """Bring ``tp``'s copying followers' bytes to now (before its views or size change)."""
        flows = self._flows_of.get(tp)
        if flows:
            pd = self.m.parts[tp]
            for f in flows:
                self._sync_flow((tp, f.follower), pd)

    def sync_all(self) -> None:
        for tp in self._flows_of:
            self.sync(tp)

    # ----------------------------------------------------------------------------- reading
    def flows(self) -> list[Flow]:
        self._replan()
        if self._list is None:
            self._list = sorted(self._flow.values())
        return self._list

    def rates(self) -> dict[FlowId, float]:
        self._replan()
        return {fid: self._rate[fid] for fid in sorted(self._flow)}

    def next_event(self) -> float:
        """Earliest of: a flow's finish, a disk filling, a fetch start (``math.inf``: none)."""
        self._replan()
        heap, token = self._heap, self._token
        while heap and token.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        top = heap[0][0] if heap else math.inf
        return min(top, self._fill, self._next_start)

    def due(self, end: float) -> list[Flow]:
        """The flows caught up at ``end`` (the model's ``now``), in (partition, follower) order;
        they leave the heap (the caller marks them caught and touches their partitions)."""
        m, heap, token = self.m, self._heap, self._token
        out: list[Flow] = []
        kept = []
        while heap:
            finish, tok, fid = heap[0]
            if token.get(fid) != tok:
                heapq.heappop(heap)
                continue
            if finish > end + CATCH_SLACK_S:
                break
            heapq.heappop(heap)
            tp, r = fid
            if finish <= end or m.size(tp, end) - self.held(tp, m.parts[tp], r) <= max(_EPS, 1e-9 * m.size(tp, end)):
                del token[fid]
                out.append(self._flow[fid])
            else:
                kept.append((finish, tok, fid))
        for item in kept:
            heapq.heappush(heap, item)
        out.sort()
        return out

    # ----------------------------------------------------------------------------- re-plan
    def _forget(self, fid: FlowId, f: Flow) -> None:
        del self._flow[fid]
        self._delta[f.keys] = self._delta.get(f.keys, 0) - 1
        members = self._members[f.keys]
        members.discard(fid)
        if not members:
            del self._members[f.keys]      # its rate stays until the next sharing (the same flows may return)
        self._rate.pop(fid, None)
        self._since.pop(fid, None)
        self._token.pop(fid, None)

    def _rebuild(self, tp: TopicPartition, repush: set[FlowId]) -> None:
        m = self.m
        old = self._flows_of.pop(tp, None)
        pd = m.parts.get(tp)
        if old:
            for f in old:
                fid = (tp, f.follower)
                if pd is not None:
                    self._sync_flow(fid, pd)
                self._forget(fid, f)
        new = m.flows_of(tp, self._full) if pd is not None else []
        if new:
            self._flows_of[tp] = new
            for f in new:
                fid = (tp, f.follower)
                self._flow[fid] = f
                self._delta[f.keys] = self._delta.get(f.keys, 0) + 1
                self._members.setdefault(f.keys, set()).add(fid)
                self._since[fid] = m.now
                repush.add(fid)
                if f.keys not in self._class_rate:
                    self._realloc = True
        if old or new:
            self._list = None
            if [f.keys for f in old or ()] != [f.keys for f in new]:
                self._realloc = True

    def _reallocate(self, repush: set[FlowId]) -> None:
        """Share the rates out again; when flows only left since the last sharing, the classes
        below the lowest old rate of those that lost flows keep theirs (maxmin.allocate_classes)."""
        m = self.m
        counts = {cls: len(fids) for cls, fids in self._members.items()}
        lost = [cls for cls, d in self._delta.items() if d < 0]
        if self._caps_moved or any(d > 0 for d in self._delta.values()):
            keep, below = None, 0.0
        elif lost:
            keep, below = self._class_rate, min(self._class_rate.get(cls, 0.0) for cls in lost)
        else:
            keep, below = self._class_rate, math.inf      # the same flows: the same rates
        self._delta, self._caps_moved, self._realloc = {}, False, False
        caps = m.caps({k for cls in counts for k in cls})
        rates = allocate_classes(counts, caps, keep, below)
        self._class_rate = {cls: rate for cls, rate in self._class_rate.items() if cls in counts}
        for cls, rate in rates.items():
            old = self._class_rate.get(cls)
            if old is not None and (old == rate or abs(old - rate) <= _SAME_RATE * max(abs(old), abs(rate))):
                continue
            self._class_rate[cls] = rate
            for fid in self._members[cls]:
                self._sync_flow(fid, m.parts[fid[0]])    # its bytes so far, at the old rate
                repush.add(fid)

    def _finish(self, f: Flow, rate: float) -> float:
        m = self.m
        pd, now, produce = m.parts[f.tp], m.now, m.produce_rate
        grows = produce > 0 and pd.leader >= 0 and pd.leader in m.live
        size = pd.size + (produce * (now - pd.t) if grows and now > pd.t else 0.0)
        remaining = size - pd.have[f.follower]
        if remaining <= _EPS:
            return now + 0.0
        gain = rate - (produce if grows else 0.0)
        return now + (remaining / gain if gain > 0 else math.inf)

    def _replan(self) -> None:
        if not self._pending:
            return
        m = self.m
        used = None
        if m.disk:
            used = m.disks_used()
            full = m.full_disks(used)
        else:
            full = set()
        if full != self._full:
            changed = full ^ self._full
            self._full = full
            self._stale.update(tp for tp in m._copying if not changed.isdisjoint(m.parts[tp].have))
        if self._all:
            self._stale.update(self._flows_of)
            self._stale.update(m._copying)
            self._all = False
        stale, self._stale = self._stale, set()
        repush: set[FlowId] = set()
        for tp in stale:
            self._rebuild(tp, repush)
        if self._realloc:
            self._reallocate(repush)
        now, heap = m.now, self._heap
        for fid in repush:
            f = self._flow.get(fid)
            if f is None:
                continue
            rate = self._class_rate[f.keys]
            self._rate[fid] = rate
            self._since[fid] = now
            tok = next(self._seq)
            self._token[fid] = tok
            finish = self._finish(f, rate)
            if finish < math.inf:
                heapq.heappush(heap, (finish, tok, fid))
        if len(heap) > 4 * len(self._flow) + 1024:
            self._heap = heap = [e for e in heap if self._token.get(e[2]) == e[1]]
            heapq.heapify(heap)
        self._fill = self._fill_time(used) if used is not None else math.inf
        if self._starts_dirty:
            self._next_start = min(m.starts.values(), default=math.inf)
            self._starts_dirty = False
        self._pending = False

    def _fill_time(self, used: dict[int, float]) -> float:
        m = self.m
        inflow: dict[int, float] = {}
        for (_, b), rate in self._rate.items():
            if b in m.disk and rate > 0:
                inflow[b] = inflow.get(b, 0.0) + rate
        return min((m.now + max(0.0, m.disk[b] - used[b]) / rate for b, rate in inflow.items()), default=math.inf)
