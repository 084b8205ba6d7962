"""The active controller (Kafka 2.4+): failover, brokers, topics, ISR notifications (docs/zookeeper.md §2.1–§2.6).

A :class:`Controller` exists only while its broker holds ``/controller``; it is built on
winning the election and loads everything from ZooKeeper (§2.1 order), so a failover never
reuses the previous controller's memory. It reacts to events the engine hands it (ZooKeeper
watch firings, which it re-arms by reading with a watch, as Kafka does). Reassignment,
deletion and preferred election live in mixins (:mod:`kafka_sim.reassign`,
:mod:`kafka_sim.deletion`, :mod:`kafka_sim.preferred`, :mod:`kafka_sim.membership`).

Every write is a fenced multi (:class:`kafka_sim.zk_io.Fenced`); a failed fence raises
:class:`kafka_sim.zk_io.ControllerMoved` and the engine drops this controller. Partition-state
writes are conditional on the cached zkVersion; a BADVERSION is re-read and retried.
A lost connection gives the event up (re-armed; run again when the session answers, by
:meth:`Controller.resync` or the engine's retry): a handler cut short leaves its memory as it was
for what ZooKeeper may not have seen (new topics, new partitions, live brokers, a started
deletion), so the re-run does it again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent

from kafka_sim import elections
from kafka_sim.deletion import DeletionMixin
from kafka_sim.membership import MembershipMixin
from kafka_sim.phases import PartitionReassignment
from kafka_sim.preferred import PreferredMixin
from kafka_sim.reassign import ReassignMixin
from kafka_sim.zk_io import CONNECTION_LOST, SESSION_GONE, Fenced, Op, failed
from kafka_zk import paths
from kafka_zk.codecs import (InvalidPayload, PartitionState, TopicAssignment, TopicPartition,
                             decode_entity_config, decode_isr_change, decode_partition_state,
                             decode_topic_assignment)

if TYPE_CHECKING:
    from kafka_sim.engine import Engine

log = logging.getLogger(__name__)
StateFn = Callable[[PartitionState], "elections.LeaderIsr | None"]


@dataclass
class TopicMeta:
    """The controller's copy of one topic znode (RS, ARS, RRS per partition)."""

    partitions: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None

    @classmethod
    def from_assignment(cls, a: TopicAssignment) -> "TopicMeta":
        return cls(dict(a.partitions), dict(a.adding), dict(a.removing), a.topic_id)

    def encode(self) -> bytes:
        """What a 2.4–2.7 controller writes: always v2 (v3 when a topic id exists)."""
        return TopicAssignment(self.partitions, self.adding, self.removing, self.topic_id).encode(
            3 if self.topic_id else 2)


#: watches whose firing a controller acts on: children of these parents, and these nodes themselves
CHILD_WATCH_KINDS = {paths.BROKER_IDS: "brokers", paths.BROKER_TOPICS: "topics", paths.DELETE_TOPICS: "delete_topics",
                     paths.ISR_CHANGE_NOTIFICATION: "isr"}
NODE_WATCH_KINDS = {paths.REASSIGN_PARTITIONS: "reassign", paths.PREFERRED_REPLICA_ELECTION: "preferred"}


def _fire_if_written_meanwhile(result, path: str, version: int, watch: Callable) -> None:
    """The asynchronous re-watch of a state read from this event's copy (``version``) came back: when
    another session wrote the znode before ZooKeeper set the watch, that write fires nothing, so the
    watch is called here, as Kafka's controller — which reads and watches in one request — would have
    seen the newer data (lost otherwise under load: a reassignment's ISR change never noticed)."""
    try:
        _data, stat = result.get(block=False)
    except Exception:            # the session's troubles reach the engine by its own path
        return
    if stat.version != version:
        watch(WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, path))


class Controller(MembershipMixin, ReassignMixin, DeletionMixin, PreferredMixin):
    """The controller logic of broker ``broker_id`` for epoch ``epoch``."""

    def __init__(self, engine: "Engine", broker_id: int, epoch: int, epoch_zk_version: int) -> None:
        self.engine = engine
        self.id = broker_id
        self.zk = engine.brokers[broker_id].client
        self.epoch = epoch
        self.fenced = Fenced(self.zk, epoch_zk_version, engine.journal, f"broker {broker_id}", engine.reads)
        self.live: dict[int, int] = {}
        self.topics: dict[str, TopicMeta] = {}
        self.states: dict[TopicPartition, tuple[PartitionState, int]] = {}
        self.reassigning: dict[TopicPartition, PartitionReassignment] = {}
        self.to_delete: set[str] = set()
        self.ineligible: set[str] = set()
        self.deletion_started: set[str] = set()
        self.deleted_replicas: dict[str, set[tuple[TopicPartition, int]]] = {}
        self.shutting_down: set[int] = set()
        self._watchers: dict[tuple, Callable] = {}
        self._armed: set[tuple] = set()                      # (kind, key) of watches set, not fired
        self._node_cache: tuple[int, object] | None = None   # (mzxid, parsed reassignment node)
        self._node_frags: tuple[object, list[bytes], list[tuple[str, int]]] | None = None   # (that node, its entries' JSON, keys)
        self.loaded = False          # failover() ran to its end (a lost connection can cut it short)

    # ------------------------------------------------------------------ watches
    def watcher(self, kind: str, key: object = None, on: tuple[str, ...] = ()) -> Callable:
        """A stable watch callback posting ``(kind, key)`` to the engine for this controller.

        Asking for it means it is about to be set, so ``(kind, key)`` counts as armed until it
        fires (Kafka's ZooKeeperClient retries a read until the session answers, so a watch it
        asked for is set in the end). kazoo drops every watch when the connection is lost and
        tells each one with a ``NONE`` event; the Java client Kafka uses keeps them and sets them
        again on reconnection (SetWatches), which :meth:`resync` does for the armed ones.
        """
        w = self._watchers.get((kind, key))
        if w is None:
            engine, me = self.engine, self

            def w(event, kind=kind, key=key):
                if event.type == "NONE":          # the connection was lost: still armed for us
                    return
                me._armed.discard((kind, key))
                if not on or event.type in on:
                    engine.post(("controller", me, kind, key))
            self._watchers[(kind, key)] = w
        self._armed.add((kind, key))
        return w

    def fires_on(self, op: str, path: str) -> bool:
        """Whether an armed watch of this controller fires when ``op`` (create | set | delete)
        commits at ``path`` — the engine's own writes whose firing it waits for before simulated
        time runs (:meth:`kafka_sim.engine.Engine.settle_own_watches`)."""
        parent, _, name = path.rpartition("/")
        keys: list[tuple] = []
        if op in ("create", "delete") and parent in CHILD_WATCH_KINDS:
            keys.append((CHILD_WATCH_KINDS[parent], None))
        if path in NODE_WATCH_KINDS:
            keys.append((NODE_WATCH_KINDS[path], None))
        elif parent == paths.BROKER_TOPICS:
            keys.append(("topic", name))
        elif name == "state":
            parts = path.split("/")      # '', brokers, topics, <t>, partitions, <p>, state
            if len(parts) == 7 and parts[5].isdigit():
                keys.append(("state", TopicPartition(parts[3], int(parts[5]))))
        return any(k in self._armed for k in keys)

    def resync(self) -> list[str]:
        """After the session answers again (a connection loss, a ZooKeeper server restart): set
        every armed watch again, and act on what changed meanwhile — what SetWatches makes
        Kafka's controller do (an existence watch fires if its node was created, a child watch
        if the children changed, a data watch if the data changed). Handlers re-read with a
        watch, so each is set again. The standing ones (admin nodes, brokers, topics, ISR
        notifications) are always set again — so a reassignment watch consumed by a hand deletion
        is set again too, where a 2.4 controller would stay blind until it changes (a known
        simplification, kafka_sim/README.md). Returns what it found in the admin nodes."""
        found: list[str] = []
        # the controller's standing registrations (Kafka keeps these handlers for its whole term),
        # admin nodes first, then what else was armed (topic data, reassigning partitions' states).
        # Not trusted to the armed set alone: a firing seen late on kazoo's thread can discard a
        # watch the engine has just set again.
        standing = [("preferred", None), ("reassign", None), ("delete_topics", None), ("brokers", None),
                    ("topics", None), ("isr", None)]
        armed = standing + [a for a in sorted(self._armed, key=repr) if a not in standing]
        self._armed.clear()
        try:
            for i, (kind, key) in enumerate(armed):
                self._resync_one(kind, key, found)
        except Exception:
            self._armed.update(armed[i:])     # the connection dropped again: the next resync does the rest
            raise
        return found

    def _resync_one(self, kind: str, key: object, found: list[str]) -> None:
        """Set one armed watch again and act as its firing would (see :meth:`resync`)."""
        if kind == "reassign":
            stat = self.zk.exists(paths.REASSIGN_PARTITIONS, watch=self.reassign_watcher())
            cache = self._node_cache
            if stat is not None and (cache is None or cache[0] != stat.mzxid):
                found.append("reassign_partitions")
                self.process_reassign_node()
        elif kind == "preferred":
            if self.zk.exists(paths.PREFERRED_REPLICA_ELECTION) is not None:
                found.append("preferred_replica_election")
            self.process_preferred_node()
        else:
            if kind == "delete_topics" and self.zk.get_children(paths.DELETE_TOPICS):
                found.append("delete_topics")
            self.handle(kind, key)

    # ------------------------------------------------------------------ helpers
    def tps(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.topics[topic].partitions)]

    def all_tps(self) -> list[TopicPartition]:
        return [tp for t in sorted(self.topics) for tp in self.tps(t)]

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        return self.topics[tp.topic].partitions[tp.partition]

    def exists(self, tp: TopicPartition) -> bool:
        meta = self.topics.get(tp.topic)
        return meta is not None and tp.partition in meta.partitions

    def live_set(self) -> set[int]:
        return set(self.live)

    def read_state(self, tp: TopicPartition, watch: Callable | None = None) -> PartitionState | None:
        """The state znode (with ``watch`` set on it when given); this event's copy when it has one
        (:class:`kafka_sim.zk_io.EventReads`: the watch is still set, asynchronously, in order)."""
        path = paths.partition_state(*tp)
        reads = self.engine.reads
        known = reads.get(path)
        if known is not None:
            data, version = known
            if watch is not None and reads.needs_watch(path, watch):
                pending = self.zk.get_async(path, watch=watch)
                pending.rawlink(lambda res: _fire_if_written_meanwhile(res, path, version, watch))
        else:
            try:
                data, stat = self.zk.get(path, watch=watch)
            except NoNodeError:
                self.states.pop(tp, None)
                return None
            version = stat.version
            reads.put(path, data, version)
            if watch is not None:
                reads.needs_watch(path, watch)
        st = decode_partition_state(data)
        self.states[tp] = (st, version)
        return st

    def update_states(self, items: Iterable[tuple[TopicPartition, StateFn]]
                      ) -> dict[TopicPartition, PartitionState]:
        """Apply ``fn(state) -> (leader, isr) | None`` to each partition, leader_epoch + 1.

        As Kafka's controller does, the current states are read from ZooKeeper first (pipelined)
        and written conditionally on the version read; a BADVERSION is re-read and retried.
        """
        done: dict[TopicPartition, PartitionState] = {}
        todo = list(items)
        for attempt in range(5):
            self._load_states([tp for tp, _ in todo])
            ops, planned = [], []
            for tp, fn in todo:
                cached = self.states.get(tp)
                if cached is None:
                    continue
                st, ver = cached
                res = fn(st)
                if res is None:
                    continue
                new = PartitionState(res[0], st.leader_epoch + 1, tuple(res[1]), self.epoch)
                ops.append(Op("set", paths.partition_state(*tp), new.encode(), ver))
                planned.append((tp, fn, new, ver))
            if not ops:
                break
            results = self.fenced.write_many(ops)
            retry = []
            for (tp, fn, new, ver), r in zip(planned, results):
                if isinstance(r, BadVersionError):
                    retry.append((tp, fn))
                elif failed(r):
                    log.warning("state write for %s failed: %r", tp, r)
                else:
                    self.log_state_change(tp, self.states.get(tp), new, r.version)
                    self.states[tp] = (new, r.version)
                    done[tp] = new
                    self.engine.model.set_view(tp, leader=new.leader, isr=new.isr)
            if not retry:
                break
            todo = retry
        return done

    def log_state_change(self, tp: TopicPartition, before: tuple[PartitionState, int] | None,
                         after: PartitionState, zk_version: int) -> None:
        """The state-change.log lines of a state write (kafka_sim/state_change_log.py)."""
        log_ = self.engine.state_log
        if not log_.enabled:
            return
        meta = self.topics.get(tp.topic)
        rs, ars, rrs = self.full(tp) if meta and tp.partition in meta.partitions else ((), (), ())
        now = self.engine.now()
        live = {b for b in self.live_set() if b in self.engine.brokers and self.engine.brokers[b].alive}
        if tp.topic not in self.to_delete:         # deletion logs its own partition transitions
            log_.partition_changed(self.id, self.epoch, now, tp, before[0] if before else None, after,
                                   zk_version, live)
        log_.leader_and_isr_sent(self.id, self.epoch, now, tp, after, zk_version, rs, ars, rrs, live,
                                 is_new=before is None)

    def update_state(self, tp: TopicPartition, fn: StateFn) -> PartitionState | None:
        return self.update_states([(tp, fn)]).get(tp)

    def write_topic(self, topic: str) -> None:
        meta = self.topics[topic]
        r = self.fenced.write(Op("set", paths.topic(topic), meta.encode()))
        if failed(r):
            log.warning("topic znode write for %s failed: %r", topic, r)
        model = self.engine.model
        for p, rs in meta.partitions.items():
            tp = TopicPartition(topic, p)
            pd = model.parts.get(tp)
            if pd is not None and pd.replicas != rs:
                model.set_view(tp, replicas=rs)

    def remove_replicas_from_isr(self, pairs: Iterable[tuple[TopicPartition, int]]) -> None:
        """OfflineReplica for each ``(tp, broker)``: one write per replica in the ISR,
        processed one broker id at a time (ascending), partitions in order (§2.2)."""
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, b in pairs:
            by_broker.setdefault(b, []).append(tp)
            self.engine.state_log.replica_changed(self.id, self.epoch, self.engine.now(), tp, b,
                                                  "OnlineReplica", "OfflineReplica")
        for b in sorted(by_broker):
            self.update_states(
                (tp, lambda st, b=b: elections.remove_from_isr(st.leader, st.isr, b)
                 if b in st.isr else None) for tp in sorted(set(by_broker[b])))

    def unclean_allowed(self, topic: str) -> bool:
        try:
            data, _ = self.zk.get(paths.topic_config(topic))
            value = decode_entity_config(data).config.get("unclean.leader.election.enable")
        except (NoNodeError, InvalidPayload):
            value = None
        if value is None:
            return self.engine.spec.unclean_leader_election
        return value.strip().lower() == "true"

    # ------------------------------------------------------------------ failover (§2.1)
    def failover(self) -> None:
        zk = self.zk
        ids = zk.get_children(paths.BROKER_IDS, watch=self.watcher("brokers"))
        names = zk.get_children(paths.BROKER_TOPICS, watch=self.watcher("topics"))
        zk.get_children(paths.DELETE_TOPICS, watch=self.watcher("delete_topics"))
        zk.exists(paths.PREFERRED_REPLICA_ELECTION, watch=self.preferred_watcher())
        zk.exists(paths.REASSIGN_PARTITIONS, watch=self.reassign_watcher())
        for parent in (paths.LOG_DIR_EVENT_NOTIFICATION, paths.ISR_CHANGE_NOTIFICATION):
            watch = self.watcher("isr") if parent == paths.ISR_CHANGE_NOTIFICATION else None
            kids = zk.get_children(parent, watch=watch)
            self.fenced.write_many(Op("delete", f"{parent}/{k}") for k in sorted(kids))
        self.live = self._read_brokers(ids)
        self._load_topics(names)
        self._load_states(self.all_tps())
        model = self.engine.model
        for tp, (st, _) in self.states.items():
            model.set_view(tp, replicas=self.replicas(tp), leader=st.leader, isr=st.isr)
        self.init_deletion()
        self.elect_offline_and_new()
        self.resume_reassignments()
        self.resume_deletions()
        self.process_preferred_node()
        self.loaded = True

    def _read_brokers(self, ids: list[str]) -> dict[int, int]:
        pending = [(int(i), self.zk.exists_async(paths.broker(int(i)))) for i in ids if i.isdigit()]
        out = {}
        for bid, res in pending:
            stat = res.get(timeout=30)
            if stat is not None:
                out[bid] = stat.czxid
        return out

    def _load_topics(self, names: Iterable[str]) -> list[str]:
        pending = [(t, self.zk.get_async(paths.topic(t), watch=self.watcher("topic", t, ("CHANGED",))))
                   for t in sorted(names)]
        loaded = []
        for t, res in pending:
            try:
                data, _ = res.get(timeout=30)
                self.topics[t] = TopicMeta.from_assignment(decode_topic_assignment(data))
                loaded.append(t)
            except NoNodeError:
                continue
            except InvalidPayload as exc:
                log.warning("ignoring topic %s: %s", t, exc)
        return loaded

    def _load_states(self, tps: list[TopicPartition]) -> None:
        """Read the state znodes of ``tps``, pipelined (those this event already has: from it)."""
        reads = self.engine.reads
        pending = []
        for tp in tps:
            path = paths.partition_state(*tp)
            known = reads.get(path)
            if known is not None:
                self.states[tp] = (decode_partition_state(known[0]), known[1])
            else:
                pending.append((tp, path, self.zk.get_async(path)))
        for tp, path, res in pending:
            try:
                data, stat = res.get(timeout=30)
                self.states[tp] = (decode_partition_state(data), stat.version)
                reads.put(path, data, stat.version)
            except NoNodeError:
                self.states.pop(tp, None)

    # ------------------------------------------------------------------ partitions (§2.3)
    def elect_offline_and_new(self, only: Iterable[TopicPartition] | None = None) -> None:
        """triggerOnlinePartitionStateChange: New → create state; Offline → Offline election."""
        live = self.live_set()
        new, offline = [], []
        for tp in (self.all_tps() if only is None else only):
            if tp.topic in self.to_delete or not self.exists(tp):
                continue
            cached = self.states.get(tp)
            if cached is None:
                new.append(tp)
            elif cached[0].leader not in live:
                offline.append(tp)
        if new:
            self.create_partitions(new)
        unclean = {t: self.unclean_allowed(t) for t in {tp.topic for tp in offline}} if offline else {}
        self.update_states(
            (tp, lambda st, tp=tp: None if st.leader in live
             else elections.offline(self.replicas(tp), st.isr, live, unclean[tp.topic]))
            for tp in offline)

    def create_partitions(self, tps: list[TopicPartition]) -> None:
        """New partitions with a live replica get partitions/, partitions/<p>, state (in that
        order, batched); the others stay New with no node (§2.3)."""
        live = self.live_set()
        ready = [(tp, elections.new_partition(self.replicas(tp), live)) for tp in tps]
        ready = [(tp, li) for tp, li in ready if li is not None]
        if not ready:
            return
        topics = sorted({tp.topic for tp, _ in ready})
        self.fenced.write_many(Op("create", paths.topic_partitions(t)) for t in topics)
        self.fenced.write_many(Op("create", paths.partition(*tp)) for tp, _ in ready)
        states = [PartitionState(li[0], 0, li[1], self.epoch) for _, li in ready]
        results = self.fenced.write_many(
            Op("create", paths.partition_state(*tp), st.encode()) for (tp, _), st in zip(ready, states))
        model = self.engine.model
        for (tp, _), st, r in zip(ready, states, results):
            if isinstance(r, NodeExistsError):
                st = self.read_state(tp)
                if st is None:
                    continue
            elif failed(r):
                continue
            else:
                self.states[tp] = (st, 0)
                self.log_state_change(tp, None, st, 0)
            model.ensure(tp, self.engine.initial_size(tp))
            model.set_view(tp, replicas=self.replicas(tp), leader=st.leader, isr=st.isr)

    def on_topics_change(self) -> None:
        names = set(self.zk.get_children(paths.BROKER_TOPICS, watch=self.watcher("topics")))
        for gone in sorted(set(self.topics) - names):
            if gone in self.to_delete:
                self.topic_gone(gone)        # a deletion whose writes landed, their replies lost
            else:
                self.forget_topic(gone)
        known = set(self.topics)
        try:
            added = self._load_topics(sorted(names - known))
            tps = [tp for t in added for tp in self.tps(t)]
            if tps:
                self.create_partitions(tps)
        except SESSION_GONE:
            # cut short: the re-run must find these topics new again and create their partitions
            # (a create that landed answers NODEEXISTS and is read back)
            for t in sorted(set(self.topics) - known):
                self.forget_topic(t)
            raise

    def forget_topic(self, topic: str) -> None:
        for tp in self.tps(topic):
            self.states.pop(tp, None)
        self.topics.pop(topic, None)

    def on_topic_data(self, topic: str) -> None:
        """§2.4: only new partition ids count; rewritten back while queued for deletion."""
        try:
            data, _ = self.zk.get(paths.topic(topic), watch=self.watcher("topic", topic, ("CHANGED",)))
            assignment = decode_topic_assignment(data)
        except (NoNodeError, InvalidPayload):
            return
        meta = self.topics.get(topic)
        if meta is None:
            return
        added = sorted(set(assignment.partitions) - set(meta.partitions))
        if not added:
            return
        if topic in self.to_delete:
            self.fenced.write(Op("set", paths.topic(topic), meta.encode()))
            return
        for p in added:
            meta.partitions[p] = assignment.partitions[p]
        try:
            self.create_partitions([TopicPartition(topic, p) for p in added])
        except SESSION_GONE:
            for p in added:             # cut short: the re-run must find these partitions new again
                meta.partitions.pop(p, None)
                self.states.pop(TopicPartition(topic, p), None)
            raise

    # ------------------------------------------------------------------ ISR notifications (§2.6)
    def on_isr_notifications(self) -> None:
        kids = sorted(self.zk.get_children(paths.ISR_CHANGE_NOTIFICATION, watch=self.watcher("isr")))
        tps: set[TopicPartition] = set()
        # pipelined, in order, as 2.4's getPartitionsFromIsrChangeNotifications sends its batch of reads
        pending = [self.zk.get_async(f"{paths.ISR_CHANGE_NOTIFICATION}/{k}") for k in kids]
        for res in pending:
            try:
                data, _ = res.get(timeout=30)
                tps.update(decode_isr_change(data).partitions)
            except (NoNodeError, InvalidPayload):
                continue
        self._load_states([tp for tp in sorted(tps) if self.exists(tp)])     # pipelined, in order
        self.fenced.write_many(Op("delete", f"{paths.ISR_CHANGE_NOTIFICATION}/{k}") for k in kids)
        for tp in sorted(tps):
            if tp in self.reassigning and self.exists(tp):
                self.check_reassignment_progress(tp)

    # ------------------------------------------------------------------ dispatch
    def handle(self, kind: str, key: object) -> None:
        handler = {
            "brokers": lambda: self.on_brokers_change(),
            "topics": lambda: self.on_topics_change(),
            "topic": lambda: self.on_topic_data(key),
            "delete_topics": lambda: self.on_delete_topics_change(),
            "isr": lambda: self.on_isr_notifications(),
            "reassign": lambda: self.on_reassign_created(),
            "reassign_run": lambda: self.process_reassign_node(),
            "preferred": lambda: self.on_preferred_created(),
            "state": lambda: self.on_reassigning_state_change(key),
            "state_run": lambda: self.handle_reassigning_state(key),
        }.get(kind)
        if handler is None:
            return
        try:
            handler()
        except CONNECTION_LOST:
            # Kafka's ZooKeeperClient retries a request until the session answers, so the event is
            # handled in the end: armed again, the resync on reconnection handles it
            self._armed.add((kind, key))
            raise
