"""Partition reassignment as a 2.4+ controller runs it (docs/zookeeper.md §2.7.1, §2.7.3, §2.7.5).

* Trigger: *creation* of ``/admin/reassign_partitions`` only. Processing re-arms the watch by
  checking existence with a watch (Kafka's registerZNodeChangeHandlerAndCheckExistence), so a
  hand deletion consumes the watch and the next node is ignored until the controller changes;
  the controller's own deletion of the node is followed by a queued event that re-arms it and
  checks existence (2.4.1's ``eventManager.put(ZkPartitionReassignment)``), so a node created
  right after the deletion is processed.
* Strict binding: an unknown field anywhere (e.g. ``log_dirs``) makes the document invalid,
  treated as empty; the node stays forever. Entries for unknown partitions or topics queued
  for deletion are errors, removed from the node (fresh read; deleted when empty). No replica
  validation on this path.
* Order: the partitions of one document start in the iteration order of the controller's
  Scala ``mutable.HashMap`` keyed by TopicPartition (:func:`controller_order`), not in document
  order; a partition named twice takes its last target.
* Per partition: U (topic znode RS/ARS/RRS, superseded adding replicas dropped), then A (epoch
  +1, adding replicas start copying) or B (leader moved only if it leaves or is dead, epoch
  +1; each removed replica out of the ISR, +1 each; topic znode := target; matching entry
  removed from the node; deletion resumed).
"""

from __future__ import annotations

import dataclasses
import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

from kazoo.exceptions import NoNodeError

from kafka_sim import elections
from kafka_sim.phases import Phase, PartitionReassignment, advance
from kafka_sim.timeline import update_detail
from kafka_sim.zk_io import SESSION_GONE, ControllerMoved, Op
from kafka_zk import paths
from kafka_zk.codecs import (InvalidPayload, ReassignmentEntry, ReassignmentRequest, TopicPartition,
                             decode_reassignment, dumps)
from kafka_zk.java_order import scala213_hashmap_order, topic_partition_hash

if TYPE_CHECKING:
    from kafka_sim.controller import Controller

log = logging.getLogger(__name__)


def entry_json(e: ReassignmentEntry) -> bytes:
    """One entry of ``/admin/reassign_partitions`` as ``ReassignmentRequest.encode`` writes it."""
    return dumps({"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas)})


def node_json(version: int, entries_json: list[bytes]) -> bytes:
    """The whole document from its entries' JSON: ``ReassignmentRequest(entries, version).encode()``."""
    return b'{"version":%d,"partitions":[' % version + b",".join(entries_json) + b"]}"
Full = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]   # (RS, ARS, RRS)


def _positions(keys: list[tuple[str, int]], tps: set[TopicPartition]) -> list[int]:
    """Where the entries for ``tps`` are in the node (a partition may be named twice), in order;
    one partition (a completed move, the common case) is found by ``list.index``, not a Python loop."""
    if len(tps) != 1:
        return [i for i, key in enumerate(keys) if key in tps]
    (tp,) = tps
    found, i = [], -1
    while True:
        try:
            i = keys.index(tp, i + 1)
        except ValueError:
            return found
        found.append(i)


def _without(items: list, gone: list[int]) -> list:
    """``items`` without the positions ``gone`` (ascending), by slicing."""
    out, start = [], 0
    for i in gone:
        out.extend(items[start:i])
        start = i + 1
    out.extend(items[start:])
    return out


def controller_order(tps: list[TopicPartition]) -> list[TopicPartition]:
    """The order 2.4.1's controller starts the partitions of one document in.

    KafkaController.processZkPartitionReassignment puts the node's entries into a
    ``mutable.Map`` (a Scala ``mutable.HashMap`` keyed by TopicPartition) and
    maybeTriggerPartitionReassignment runs onPartitionReassignment in its iteration order.
    Modelled: Kafka 2.4.1's Scala 2.13 build (Scala 2.13.1's HashMap, see
    :func:`kafka_zk.java_order.scala213_hashmap_order`); the default Scala 2.12 build
    iterates its HashMap in another order.
    """
    return scala213_hashmap_order(tps, lambda tp: topic_partition_hash(tp.topic, tp.partition))


def plan(current: Full, target: tuple[int, ...]) -> Full:
    """KIP-455 arithmetic: RS' = distinct(T ++ origin), ARS' = RS' − origin, RRS' = RS' − T."""
    rs, ars, _ = current
    origin = [r for r in rs if r not in ars]
    new_rs = tuple(dict.fromkeys(list(target) + origin))
    return (new_rs, tuple(r for r in new_rs if r not in origin),
            tuple(r for r in new_rs if r not in target))


class ReassignMixin:
    """Reassignment reactions of :class:`kafka_sim.controller.Controller`."""

    def reassign_watcher(self: "Controller") -> Callable:
        return self.watcher("reassign", None, ("CREATED",))

    def full(self: "Controller", tp: TopicPartition) -> Full:
        meta = self.topics[tp.topic]
        return (meta.partitions[tp.partition], meta.adding.get(tp.partition, ()),
                meta.removing.get(tp.partition, ()))

    # ------------------------------------------------------------------ the admin znode
    def _read_node(self: "Controller", watch: bool) -> ReassignmentRequest | None | bool:
        """The node's request; None if absent; False if present but invalid."""
        stat = self.zk.exists(paths.REASSIGN_PARTITIONS, watch=self.reassign_watcher() if watch else None)
        if stat is None:
            return None
        cache = self._node_cache
        if cache is not None and cache[0] == stat.mzxid:    # unchanged since we last read/wrote it
            return cache[1]
        try:
            data, stat = self.zk.get(paths.REASSIGN_PARTITIONS)
        except NoNodeError:
            return None
        try:
            req: ReassignmentRequest | bool = decode_reassignment(data, strict=True)
        except InvalidPayload as exc:
            log.warning("Ignoring partition reassignment due to invalid json: %s", exc)
            req = False
        self._node_cache = (stat.mzxid, req)
        return req

    def on_reassign_created(self: "Controller") -> None:
        """The node appeared: acted on ``spec.reassign_reaction_s`` later (2.4.1 took 0.007–0.24 s
        to its first multi in the recordings, kafka_sim/spec.py)."""
        self.engine.history("reassign_node_seen")
        self.engine.defer(self.engine.spec.reassign_reaction_s, ("controller", self, "reassign_run", None))

    def process_reassign_node(self: "Controller") -> set[TopicPartition]:
        """Run every entry of the node; returns the partitions it named."""
        req = self._read_node(watch=True)
        if not req:
            return set()
        errors: list[TopicPartition] = []
        targets = {e.tp: e.replicas for e in req.entries}      # a repeated partition: the last wins
        named: set[TopicPartition] = set(targets)
        for tp in controller_order(list(targets)):
            if tp.topic in self.to_delete or not self.exists(tp):
                errors.append(tp)
                continue
            try:
                self.on_partition_reassignment(tp, plan(self.full(tp), targets[tp]))
            except (ControllerMoved, *SESSION_GONE):
                raise                              # not this partition's failure: the event is run again
            except Exception:  # noqa: BLE001 - Kafka answers UNKNOWN_SERVER_ERROR and goes on
                log.exception("reassignment of %s failed", tp)
                errors.append(tp)
        if errors:
            self.remove_from_node(set(errors), only_if_target=None)
        return named

    def remove_from_node(self: "Controller", tps: set[TopicPartition],
                         only_if_target: dict[TopicPartition, tuple[int, ...]] | None) -> None:
        """Drop entries (fresh read); delete the node when empty and re-arm the watch.

        The node is rewritten after every completed move, so with thousands of moves in one
        node the rewrite is kept cheap: the entries kept are matched by (topic, partition)
        tuples and the document is joined from each entry's JSON, kept from the last rewrite
        (:func:`node_json`, byte for byte ``ReassignmentRequest.encode``)."""
        req = self._read_node(watch=True)
        if not req:
            return
        cached = self._node_frags
        if cached is not None and cached[0] is req:
            frags, keys = cached[1], cached[2]
        else:
            frags = [entry_json(e) for e in req.entries]
            keys = [(e.topic, e.partition) for e in req.entries]   # equal to, and hashed as, TopicPartitions
        gone = [i for i in _positions(keys, tps)
                if only_if_target is None or only_if_target.get(keys[i]) == req.entries[i].replicas]  # type: ignore[call-overload]
        if not gone:
            return
        keep, kept, kept_keys = _without(list(req.entries), gone), _without(frags, gone), _without(keys, gone)
        if keep:
            new = ReassignmentRequest(tuple(keep), req.version)
            r = self.fenced.write(Op("set", paths.REASSIGN_PARTITIONS, node_json(new.version, kept)))
            if hasattr(r, "mzxid"):
                self._node_cache = (r.mzxid, new)
                self._node_frags = (new, kept, kept_keys)
        else:
            self.fenced.write(Op("delete", paths.REASSIGN_PARTITIONS))
            self.engine.history("reassign_node_deleted")
            # 2.4.1: "Ensure we detect future reassignments" — an event queued after the delete
            # sets the watch and checks existence, so a node created in between is processed
            self.engine.post(("controller", self, "reassign_run", None))

    # ------------------------------------------------------------------ one partition
    def _phase(self: "Controller", tp: TopicPartition) -> PartitionReassignment:
        r = self.reassigning.get(tp)
        if r is None:
            r = self.reassigning[tp] = PartitionReassignment(since=self.engine.now())
        return r

    @contextmanager
    def _undone_if_cut_short(self: "Controller", tp: TopicPartition) -> Iterator[None]:
        """A step for ``tp`` cut short by a lost connection before the move completes (B4, the
        topic znode := target) leaves the controller's memory of the partition (its RS/ARS/RRS and
        reassignment phase) as it was before the step, so running it again redoes the step from
        its start. A loss after B4 (the node's entry, B5) keeps the completed move: the re-run
        finds the partition at its target, a no-op move whose B removes the entry (as Kafka's would).

        Kafka's controller never sees a step cut short by ZooKeeper: its ZooKeeperClient waits for
        the session and sends the request again. The emulator's controller gives the event up on
        a lost connection and runs it again when the session answers; without this, the memory
        would already say "done" for a topic znode ZooKeeper never wrote, and the re-run would skip
        the write and the catch-up it starts. Every write of the step is a set or conditional
        update, so redoing one that did land writes the same again. Any other error is not run
        again (Kafka answers UNKNOWN_SERVER_ERROR): the memory keeps what the step wrote."""
        meta = self.topics[tp.topic]
        p = tp.partition
        saved = (meta.partitions[p], meta.adding.get(p), meta.removing.get(p))
        phase = self.reassigning.get(tp)
        saved_phase = None if phase is None else dataclasses.replace(phase)
        try:
            yield
        except SESSION_GONE:
            if tp not in self.reassigning:
                raise     # completed (B4 landed, then the partition left `reassigning`): memory is ZooKeeper's
            meta.partitions[p] = saved[0]
            for table, value in ((meta.adding, saved[1]), (meta.removing, saved[2])):
                if value:
                    table[p] = value
                else:
                    table.pop(p, None)
            if saved_phase is None:
                self.reassigning.pop(tp, None)
            else:
                self.reassigning[tp] = saved_phase
            raise

    def on_partition_reassignment(self: "Controller", tp: TopicPartition, new: Full) -> None:
        with self._undone_if_cut_short(tp):
            self._reassign_partition(tp, new)

    def _reassign_partition(self: "Controller", tp: TopicPartition, new: Full) -> None:
        now = self.engine.now()
        if tp.topic in self.to_delete:
            self.ineligible.add(tp.topic)          # only a queued topic can be marked ineligible
        meta = self.topics[tp.topic]
        phase = self._phase(tp)
        old_rs = meta.partitions[tp.partition]
        if self.full(tp) != new:                   # U
            meta.partitions[tp.partition] = new[0]
            for table, value in ((meta.adding, new[1]), (meta.removing, new[2])):
                if value:
                    table[tp.partition] = value
                else:
                    table.pop(tp.partition, None)
            self.write_topic(tp.topic)
            dropped = [r for r in old_rs if r not in new[0]]
            if dropped:
                self.remove_replicas_from_isr((tp, r) for r in dropped)
                self.engine.model.set_view(tp, replicas=new[0])
        advance(phase, Phase.UPDATED, now)
        self.engine.history("reassign_update", tp, detail=update_detail(*new))
        self.read_state(tp, watch=self.watcher("state", tp, ("CHANGED",)))
        if self.is_complete(tp):
            self.complete_reassignment(tp)
        else:                                      # A
            st = self.update_state(tp, lambda st: (st.leader, st.isr))
            if st is not None:
                self.engine.state_log.reassignment_sent(self.id, self.epoch, now, tp, st, *new)
            self.engine.model.set_view(tp, replicas=new[0])
            advance(phase, Phase.CATCHING_UP, now)

    def is_complete(self: "Controller", tp: TopicPartition) -> bool:
        rs, ars, rrs = self.full(tp)
        if not ars and not rrs:
            return True
        st = self.read_state(tp)
        if st is None:
            return False
        target = [r for r in rs if r not in rrs]
        return set(target) <= set(st.isr)

    def complete_reassignment(self: "Controller", tp: TopicPartition) -> None:
        """Phase B, steps 1–6 of §2.7.3 in order."""
        meta = self.topics[tp.topic]
        rs, ars, rrs = self.full(tp)
        target = tuple(r for r in rs if r not in rrs)
        advance(self._phase(tp), Phase.COMPLETING, self.engine.now())
        meta.partitions[tp.partition] = target                        # B1
        meta.adding.pop(tp.partition, None)
        meta.removing.pop(tp.partition, None)
        live = self.live_set()

        def b2(s):                                                     # B2
            if s.leader not in target or s.leader not in live:
                leader = elections.reassign(target, s.isr, live)
                return None if leader is None else (leader, s.isr)
            return s.leader, s.isr
        self.update_state(tp, b2)
        self.remove_replicas_from_isr((tp, r) for r in rrs)            # B3
        self.engine.state_log.replicas_deleted(self.id, self.epoch, self.engine.now(), tp, rrs, live)
        self.engine.model.set_view(tp, replicas=target)
        self.write_topic(tp.topic)                                     # B4
        self.reassigning.pop(tp, None)
        # recorded before B5, so whoever sees the entry leave the node also finds the event
        self.engine.history("reassign_done", tp, detail=f"replicas={list(target)}")
        try:
            self.remove_from_node({tp}, only_if_target={tp: target})   # B5
        except SESSION_GONE:
            # the move is done; its entry is not: the node is read again when the session answers
            # (a partition at its target is a no-op move whose B removes the entry)
            self._armed.add(("reassign_run", None))
            raise
        if tp.topic in self.to_delete:                                 # B6
            self.ineligible.discard(tp.topic)
            self.resume_deletions()

    def check_reassignment_progress(self: "Controller", tp: TopicPartition) -> None:
        if tp in self.reassigning and self.reassigning[tp].phase is not Phase.ABANDONED \
                and self.exists(tp) and self.is_complete(tp):
            self.on_partition_reassignment(tp, self.full(tp))

    def on_reassigning_state_change(self: "Controller", tp: TopicPartition) -> None:
        """A reassigning partition's state znode changed: handled ``spec.reassign_completion_s``
        later (2.4.1 deleted the node 0.23–0.35 s after the ISR change that completed a move,
        kafka_sim/spec.py); the handler reads the state then, and sets the watch again."""
        self.engine.defer(self.engine.spec.reassign_completion_s, ("controller", self, "state_run", tp))

    def handle_reassigning_state(self: "Controller", tp: TopicPartition) -> None:
        if tp not in self.reassigning or not self.exists(tp):
            return
        self.read_state(tp, watch=self.watcher("state", tp, ("CHANGED",)))
        self.check_reassignment_progress(tp)

    def resume_reassignment(self: "Controller", tp: TopicPartition) -> None:
        """Re-run onPartitionReassignment with the current (RS, ARS, RRS): A again or B."""
        if self.exists(tp):
            self.on_partition_reassignment(tp, self.full(tp))

    def resume_reassignments(self: "Controller") -> None:
        """Failover step 6: the admin node first, then every partition whose topic znode still
        has adding/removing replicas (phase A again: one more epoch bump)."""
        named = self.process_reassign_node()
        for tp in self.all_tps():
            if tp in named:
                continue
            rs, ars, rrs = self.full(tp)
            if ars or rrs:
                self.on_partition_reassignment(tp, (rs, ars, rrs))

    def abandon_reassignment(self: "Controller", tp: TopicPartition) -> None:
        r = self.reassigning.get(tp)
        if r is not None and r.phase is not Phase.ABANDONED:
            advance(r, Phase.ABANDONED, self.engine.now())
