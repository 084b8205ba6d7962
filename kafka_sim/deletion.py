"""Topic deletion as a 2.4.1 controller runs it (docs/zookeeper.md §2.9, §2.7.5, §10).

* Markers of topics that do not exist are deleted at once; with ``delete.topic.enable=false``
  every marker is deleted at once and the topic stays.
* A queued topic is deleted: every live replica goes offline (ISR writes one broker id at a
  time, leader −1 when the leader goes, the last member kept), StopReplica(delete) is
  acknowledged at once by live brokers; replicas on dead brokers make the topic wait until
  the broker registers again. Then ``partitions/<p>/state``, ``partitions/<p>`` per
  partition, ``partitions``, the topic znode, ``/config/topics/<t>`` and the marker are
  deleted in that order, one fenced multi each.
* As observed on 2.4.1, a deletion requested while this controller runs a reassignment of the
  topic is not deferred (marking ineligible only affects topics already queued); the
  reassignment is abandoned and its admin-node entry stays until the controller changes. A
  controller that takes over and finds both waits for the reassignment to finish.
* A deletion cut short by a lost connection is started again when the session answers (the
  ``delete_topics`` event resumes every queued topic, as 2.4.1's ``enqueueTopicsForDeletion`` does);
  one whose last writes landed (their replies lost) is finished when the topic is seen gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from kafka_sim.zk_io import SESSION_GONE, Op
from kafka_zk import paths
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.controller import Controller


class DeletionMixin:
    """Topic deletion reactions of :class:`kafka_sim.controller.Controller`."""

    def _markers(self: "Controller") -> list[str]:
        return sorted(self.zk.get_children(paths.DELETE_TOPICS, watch=self.watcher("delete_topics")))

    def _delete_markers(self: "Controller", topics: Iterable[str]) -> None:
        self.fenced.write_many(Op("delete", paths.delete_topic_marker(t)) for t in sorted(topics))

    def init_deletion(self: "Controller") -> None:
        """Failover step 4: queue markers (or drop them), ineligible if a replica is offline
        or a partition is being reassigned."""
        markers = set(self._markers())
        missing = {t for t in markers if t not in self.topics}
        if missing or not self.engine.spec.delete_topic_enable:
            self._delete_markers(missing if self.engine.spec.delete_topic_enable else markers)
        if not self.engine.spec.delete_topic_enable:
            return
        self.to_delete = markers - missing
        live = self.live_set()
        for t in self.to_delete:
            for tp in self.tps(t):
                rs, ars, rrs = self.full(tp)
                if ars or rrs or any(r not in live for r in rs):
                    self.ineligible.add(t)

    def on_delete_topics_change(self: "Controller") -> None:
        markers = set(self._markers())
        missing = {t for t in markers if t not in self.topics}
        if missing:
            self._delete_markers(missing)
        markers -= missing
        if not self.engine.spec.delete_topic_enable:
            self._delete_markers(markers)
            return
        # (2.4.1: "mark ineligible if a reassignment is in progress" runs before the topic is
        # queued, so it has no effect; the deletion goes ahead.) enqueueTopicsForDeletion resumes
        # deletions whether or not a marker is new: what a lost connection cut short starts again.
        self.to_delete |= markers
        if markers:
            self.resume_deletions()

    def resume_deletions(self: "Controller") -> None:
        for t in sorted(self.to_delete):
            if t in self.ineligible or t in self.deletion_started or t not in self.topics:
                continue
            self.start_topic_deletion(t)

    def start_topic_deletion(self: "Controller", topic: str) -> None:
        """onTopicDeletion (or the retry for replicas that were ineligible): live replicas not
        yet deleted go offline (ISR writes) and are deleted; dead ones make the topic wait."""
        self.deletion_started.add(topic)
        try:
            self._delete_topic(topic)
        except SESSION_GONE:
            # cut short by a lost connection: not started for the re-run (the delete_topics event
            # when the session answers), which redoes what ZooKeeper did not see (the ISR writes
            # re-read their states, the deletes of gone znodes answer NONODE)
            self.deletion_started.discard(topic)
            raise

    def _delete_topic(self: "Controller", topic: str) -> None:
        live = self.live_set()
        tps = self.tps(topic)
        for tp in tps:
            if tp in self.reassigning:
                self.abandon_reassignment(tp)
        done = self.deleted_replicas.setdefault(topic, set())
        pairs = [(tp, r) for tp in tps for r in self.replicas(tp) if r in live and (tp, r) not in done]
        self.remove_replicas_from_isr(pairs)
        done.update(pairs)
        if any((tp, r) not in done for tp in tps for r in self.replicas(tp)):
            self.ineligible.add(topic)
            self.deletion_started.discard(topic)
            self.engine.history("deletion_waiting", None, detail=topic)
            return
        self.complete_topic_deletion(topic)

    def fail_replica_deletion(self: "Controller", pairs: list[tuple[TopicPartition, int]]) -> None:
        for tp, _ in pairs:
            self.ineligible.add(tp.topic)

    def resume_deletion_for_brokers(self: "Controller", brokers: set[int]) -> None:
        hit = {t for t in self.to_delete
               if t in self.topics and any(brokers & set(self.replicas(tp)) for tp in self.tps(t))}
        if hit:
            self.ineligible -= {t for t in hit if not self._reassigning_topic(t)}
            self.resume_deletions()

    def _reassigning_topic(self: "Controller", topic: str) -> bool:
        return any(self.full(tp)[1] or self.full(tp)[2] for tp in self.tps(topic))

    def complete_topic_deletion(self: "Controller", topic: str) -> None:
        ops = []
        for tp in self.tps(topic):
            ops.append(Op("delete", paths.partition_state(*tp)))
            ops.append(Op("delete", paths.partition(*tp)))
        ops += [Op("delete", paths.topic_partitions(topic)), Op("delete", paths.topic(topic)),
                Op("delete", paths.topic_config(topic)), Op("delete", paths.delete_topic_marker(topic))]
        tps = self.tps(topic)
        if self.engine.state_log.enabled:
            live, now = self.live_set(), self.engine.now()
            for tp in tps:
                self.engine.state_log.replicas_deleted(self.id, self.epoch, now, tp, self.replicas(tp), live)
                self.engine.state_log.partition_deleted(self.id, self.epoch, now, tp, live)
        self.fenced.write_many(ops)
        self.topic_gone(topic)

    def topic_gone(self: "Controller", topic: str) -> None:
        """The end of a deletion: the topic's znodes are gone, the controller forgets it. Also
        when a topic queued for deletion is seen gone (:meth:`Controller.on_topics_change`): the
        deletion's writes landed but a lost connection cut their replies, so the re-run finds no
        marker to resume from."""
        for tp in self.tps(topic):
            self.engine.model.remove(tp)
        self.forget_topic(topic)
        self.to_delete.discard(topic)
        self.ineligible.discard(topic)
        self.deletion_started.discard(topic)
        self.deleted_replicas.pop(topic, None)
        self.engine.topic_deleted(topic)
