"""The replication model's plan, kept up to date incrementally: flows, rates, finish times.

:class:`ReplicationPlan` belongs to one :class:`kafka_sim.replication.ReplicationModel`. The model tells it
what changed — a partition's views (:meth:`ReplicationPlan.touch`), every partition (``touch(None)``: a
broker up or down, a disk capacity), the caps (:meth:`ReplicationPlan.caps_changed`), the fetch starts —
and the plan brings itself up to date lazily, before time next passes or when asked:

* the flows of the touched partitions only are derived again (``ReplicationModel.flows_of``);
* the rates are shared out max-min fairly per *class* (the resource keys a flow uses:
  ``kafka_sim.maxmin.allocate_classes``) when the classes' counts or the caps changed; a throttle
  no tighter than its broker's network rate is left out of the fill (implied by the network key);
* flows of one class share one rate at every instant, so the order in which they finish never
  changes while they stay in it. Each class keeps its *progress* (∫ rate dt, brought to now when
  its rate moves) and a heap of its members by a fixed key (remaining bytes + progress −
  produce · t); the event heap holds one entry per class, its first member's finish (stale entries
  carry an old token and are skipped). A rate change costs O(classes changed), not O(member flows).

A copying follower's ``PartitionData.have`` is its bytes when it was last synced (joined its class,
or its partition changed); :meth:`ReplicationPlan.held` reads it at now (``have`` + the class's progress
since, at most the leader's size). Any change to a partition's views or size first brings its
flows' bytes to now (:meth:`ReplicationPlan.sync`); a follower leaving a class (its throttle lists changed, a
disk filling, a catch-up) leaves with its bytes synced and joins its new class with them.

Results are those of the full re-plan (every flow, every event) to float rounding: a class's
rate recomputed within 1e-12 of its old one keeps the old one (no new finish times), and at an
event time the flows due within :data:`CATCH_SLACK_S` are checked with the full re-plan's rule
(nothing left to copy, within 1e-9 of the size). A disk's fill time sums rate × members over
the classes copying into it. ``tests/kafka_sim/test_replication_incremental.py`` pins all of it
against the full re-plan (``tests/kafka_sim/replication_reference.py``). Nothing here reads a
clock or touches ZooKeeper.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import TYPE_CHECKING

from kafka_sim.flow_class import FlowClass, FlowId, sharing_caps
from kafka_sim.maxmin import Flow, Key, Keys, allocate_classes
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.replication import PartitionData, ReplicationModel

_EPS = 1e-6
#: at an event time, flows whose finish is this close after it are checked for "nothing left"
CATCH_SLACK_S = 1e-3
_SAME_RATE = 1e-12


class ReplicationPlan:
    """Flows of the copying followers, their rates (per class) and a heap of the classes' next
    finish times (each class's heap of members by key)."""

    def __init__(self, model: "ReplicationModel") -> None:
        self.m = model
        self._flows_of: dict[TopicPartition, list[Flow]] = {}
        self._flow: dict[FlowId, Flow] = {}
        self._counts: dict[Keys, int] = {}     # class -> its flows (what the sharing weighs)
        self._gone: set[Keys] = set()          # classes emptied since the last sharing
        self._caps: dict[Key, float] | None = None   # the sharing's caps (None: derive again)
        self._cap_keys: set[Key] = set()       # keys whose cap ``_caps`` holds (or found unlimited)
        self._class_rate: dict[Keys, float] = {}
        self._cls: dict[Keys, FlowClass] = {}
        # flow -> [its class, the class's progress when its bytes (``pd.have``) were synced, token, key]
        self._member: dict[FlowId, list] = {}
        self._heap: list[tuple[float, int, Keys]] = []
        self._repush: set[Keys] = set()
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
        self._caps = None

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
        """Bytes follower ``r`` of ``tp`` holds now: its bytes when last synced plus its class's
        progress since (at most the leader's size)."""
        have = pd.have[r]
        rec = self._member.get((tp, r))
        if rec is None:
            return have
        gained = rec[0].progress(self.m.now) - rec[1]
        if gained <= 0:
            return have
        return min(have + gained, self.m.size(tp))

    def _key(self, tp: TopicPartition, pd: "PartitionData", have: float, p_sync: float) -> float:
        """A member's fixed key: remaining(t) = key + produce · t − progress(t) while it stays in its
        class (its leader's size grows by ``produce`` a second: flows exist only from a live leader)."""
        return pd.size - self.m.produce_rate * pd.t - have + p_sync

    def _sync_flow(self, fid: FlowId, pd: "PartitionData") -> None:
        rec = self._member.get(fid)
        if rec is None or fid[1] not in pd.have:
            return
        c = rec[0]
        now_p = c.progress(self.m.now)
        have = pd.have[fid[1]]
        gained = now_p - rec[1]
        if gained > 0:
            size = self.m.size(fid[0])
            held = have + gained
            if held > size:           # clipped at the leader's size: its key moves
                pd.have[fid[1]] = size
                rec[1] = now_p
                if rec[2] != -1:      # (-1: caught up, off the heap until it leaves)
                    self._rekey(fid, rec, pd, size)
                return
            pd.have[fid[1]] = held
        rec[1] = now_p

    def _rekey(self, fid: FlowId, rec: list, pd: "PartitionData", have: float) -> None:
        tok = next(self._seq)
        rec[2], rec[3] = tok, self._key(fid[0], pd, have, rec[1])
        heapq.heappush(rec[0].heap, (rec[3], tok, fid))
        self._repush.add(self._flow[fid].keys)
        self._pending = True

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
        flow, rate = self._flow, self._class_rate
        return {fid: rate[flow[fid].keys] for fid in sorted(flow)}

    def next_event(self) -> float:
        """Earliest of: a flow's finish, a disk filling, a fetch start (``math.inf``: none)."""
        self._replan()
        heap, cls = self._heap, self._cls
        while heap:
            c = cls.get(heap[0][2])
            if c is not None and c.tok == heap[0][1]:
                break
            heapq.heappop(heap)
        top = heap[0][0] if heap else math.inf
        return min(top, self._fill, self._next_start)

    def _top(self, c: FlowClass) -> float | None:
        """The key of ``c``'s first member to finish (stale entries dropped), None: no member."""
        heap, member = c.heap, self._member
        while heap:
            key, tok, fid = heap[0]
            rec = member.get(fid)
            if rec is not None and rec[2] == tok:
                return key
            heapq.heappop(heap)
        return None

    def _finish_of(self, c: FlowClass, key: float, now: float) -> float:
        """When the member of ``c`` with ``key`` finishes, seen from ``now`` (the rate of now on)."""
        produce = self.m.produce_rate
        remaining = key + produce * now - c.progress(now)
        if remaining <= _EPS:
            return now + 0.0
        gain = c.rate - produce
        return now + (remaining / gain if gain > 0 else math.inf)

    def _push(self, cls: Keys, c: FlowClass, now: float) -> None:
        if len(c.heap) > 4 * c.n + 64:
            member = self._member
            c.heap = [e for e in c.heap if (rec := member.get(e[2])) is not None and rec[2] == e[1]]
            heapq.heapify(c.heap)
        tok = next(self._seq)
        c.tok = tok
        key = self._top(c)
        if key is not None:
            finish = self._finish_of(c, key, now)
            if finish < math.inf:
                heapq.heappush(self._heap, (finish, tok, cls))

    def due(self, end: float) -> list[Flow]:
        """The flows caught up at ``end`` (the model's ``now``), in (partition, follower) order;
        they leave their class's heap (the caller marks them caught and touches their partitions)."""
        m, heap, cls_of, member = self.m, self._heap, self._cls, self._member
        out: list[Flow] = []
        classes = []
        while heap:
            finish, tok, cls = heap[0]
            c = cls_of.get(cls)
            if c is None or c.tok != tok:
                heapq.heappop(heap)
                continue
            if finish > end + CATCH_SLACK_S:
                break
            heapq.heappop(heap)
            c.tok = -1
            classes.append((cls, c))
        for cls, c in classes:
            kept = []
            while True:
                key = self._top(c)
                if key is None:
                    break
                finish = self._finish_of(c, key, end)
                if finish > end + CATCH_SLACK_S:
                    break
                entry = heapq.heappop(c.heap)
                fid = entry[2]
                tp, r = fid
                if finish <= end or m.size(tp, end) - self.held(tp, m.parts[tp], r) <= max(_EPS, 1e-9 * m.size(tp, end)):
                    member[fid][2] = -1            # off the heap; it leaves the class at the re-plan
                    out.append(self._flow[fid])
                else:
                    kept.append(entry)
            for entry in kept:
                heapq.heappush(c.heap, entry)
            self._push(cls, c, end)
        out.sort()
        return out

    # ----------------------------------------------------------------------------- re-plan
    def _forget(self, fid: FlowId, f: Flow) -> None:
        del self._flow[fid]
        cls = f.keys
        self._delta[cls] = self._delta.get(cls, 0) - 1
        n = self._counts[cls] - 1
        self._member.pop(fid, None)
        if not n:
            del self._counts[cls]       # its rate stays until the next sharing (the same flows may return)
            self._gone.add(cls)
            self._cls.pop(cls, None)    # its progress starts again from 0 if it returns
            self._repush.discard(cls)
        else:
            self._counts[cls] = n
            self._cls[cls].n = n
            self._repush.add(cls)       # it may have been the first to finish

    def _join(self, fid: FlowId, f: Flow, pd: "PartitionData", now: float) -> None:
        cls = f.keys
        c = self._cls.get(cls)
        if c is None:
            follower = next(b for kind, b in cls if kind == "in")
            c = self._cls[cls] = FlowClass(self._class_rate.get(cls, 0.0), now, follower)
            if self._caps is not None and not self._cap_keys.issuperset(cls):
                sharing_caps(self.m, cls, self._caps, self._cap_keys)
        c.n += 1
        p = c.progress(now)
        tok = next(self._seq)
        key = self._key(fid[0], pd, pd.have[fid[1]], p)
        self._member[fid] = [c, p, tok, key]
        heapq.heappush(c.heap, (key, tok, fid))
        self._repush.add(cls)

    def _rebuild(self, tp: TopicPartition) -> None:
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
            now = m.now
            for f in new:
                fid = (tp, f.follower)
                self._flow[fid] = f
                self._delta[f.keys] = self._delta.get(f.keys, 0) + 1
                self._counts[f.keys] = self._counts.get(f.keys, 0) + 1
                if f.keys not in self._class_rate:
                    self._realloc = True
                self._join(fid, f, pd, now)
        if old or new:
            self._list = None
            if [f.keys for f in old or ()] != [f.keys for f in new]:
                self._realloc = True

    def _reallocate(self) -> None:
        """Share the rates out again; when flows only left since the last sharing, the classes
        below the lowest old rate of those that lost flows keep theirs (maxmin.allocate_classes).
        A class whose rate moved has its progress brought to now at the old rate: its members'
        bytes and order stand, only its entry on the event heap is pushed again."""
        m = self.m
        counts = self._counts
        lost = [cls for cls, d in self._delta.items() if d < 0]
        if self._caps_moved or any(d > 0 for d in self._delta.values()):
            keep, below = None, 0.0
        elif lost:
            keep, below = self._class_rate, min(self._class_rate.get(cls, 0.0) for cls in lost)
        else:
            keep, below = self._class_rate, math.inf      # the same flows: the same rates
        self._delta, self._caps_moved, self._realloc = {}, False, False
        if self._caps is None:
            self._caps, self._cap_keys = {}, set()
            for cls in counts:
                if not self._cap_keys.issuperset(cls):
                    sharing_caps(self.m, cls, self._caps, self._cap_keys)
        rates = allocate_classes(counts, self._caps, keep, below)
        for cls in self._gone:
            if cls not in counts:
                self._class_rate.pop(cls, None)
        self._gone = set()
        now, cls_of, repush = m.now, self._cls, self._repush
        for cls, rate in rates.items():
            old = self._class_rate.get(cls)
            if old is not None and (old == rate or abs(old - rate) <= _SAME_RATE * max(abs(old), abs(rate))):
                continue
            self._class_rate[cls] = rate
            c = cls_of[cls]
            c.p = c.progress(now)       # its members' bytes so far, at the old rate
            c.t0 = now
            c.rate = rate
            repush.add(cls)

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
        for tp in stale:
            self._rebuild(tp)
        if self._realloc:
            self._reallocate()
        now, cls_of = m.now, self._cls
        for cls in self._repush:
            c = cls_of.get(cls)
            if c is not None:
                self._push(cls, c, now)
        self._repush = set()
        if len(self._heap) > 4 * len(cls_of) + 1024:
            self._heap = [e for e in self._heap if (c := cls_of.get(e[2])) is not None and c.tok == e[1]]
            heapq.heapify(self._heap)
        self._fill = self._fill_time(used) if used is not None else math.inf
        if self._starts_dirty:
            self._next_start = min(m.starts.values(), default=math.inf)
            self._starts_dirty = False
        self._pending = False

    def _fill_time(self, used: dict[int, float]) -> float:
        """When the first disk fills at the rates of now: Σ rate · members of the classes into each broker."""
        m = self.m
        inflow: dict[int, float] = {}
        for c in self._cls.values():
            b = c.follower
            if b in m.disk and c.rate > 0 and c.n > 0:
                inflow[b] = inflow.get(b, 0.0) + c.rate * c.n
        return min((m.now + max(0.0, m.disk[b] - used[b]) / rate for b, rate in inflow.items()), default=math.inf)
