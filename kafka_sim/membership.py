"""Broker membership as the controller sees it (docs/zookeeper.md §2.5): registration, death, bounce,
controlled shutdown.

* New broker: elect leaders for New/Offline partitions (the newcomer may be eligible), re-run
  reassignments whose target contains it (phase A again), resume deletions waiting on it. The
  controller never puts it back into an ISR: the leaders do (§2.6).
* Dead broker: Offline election for partitions it led (first live ISR member, ISR filtered),
  then its replicas leave the ISRs one write per partition (+1 epoch; leader −1 when it led
  and nobody could take over; last member kept); replicas of topics being deleted make their
  topic wait.
* Bounced broker (same id, new czxid): failure then startup.
* Controlled shutdown: leaderships moved with the controlled-shutdown strategy (RF 1 and
  deleting topics skipped), then it leaves the ISRs where it follows; the answer names what it
  still leads (the broker's retries, kafka_sim/faults.py).

A broker change cut short by a lost connection leaves the controller's list of live brokers as it
was, so the re-run (when the session answers) sees the same new, dead or bounced brokers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_sim import elections
from kafka_sim.zk_io import SESSION_GONE
from kafka_zk import paths
from kafka_zk.codecs import TopicPartition

if TYPE_CHECKING:
    from kafka_sim.controller import Controller


class MembershipMixin:
    """Broker-change reactions of :class:`kafka_sim.controller.Controller`."""

    def on_brokers_change(self: "Controller") -> None:
        ids = self.zk.get_children(paths.BROKER_IDS, watch=self.watcher("brokers"))
        current = self._read_brokers(ids)
        new = sorted(set(current) - set(self.live))
        dead = sorted(set(self.live) - set(current))
        bounced = sorted(b for b in current if b in self.live and current[b] != self.live[b])
        before = self.live
        self.live = dict(current)          # a copy: a bounce pops from it below and reads current
        try:
            if new:
                self.on_broker_startup(new)
            if bounced:
                for b in bounced:
                    self.live.pop(b)
                self.on_broker_failure(bounced)
                self.live.update({b: current[b] for b in bounced})
                self.on_broker_startup(bounced)
            if dead:
                self.on_broker_failure(dead)
        except SESSION_GONE:
            # cut short by a lost connection: the event is run again when the session answers, and
            # must find the same changes (every reaction re-reads the states it writes: redoing one
            # that landed writes nothing)
            self.live = before
            raise

    def on_broker_failure(self: "Controller", dead: list[int]) -> None:
        self.shutting_down -= set(dead)
        dead_set = set(dead)
        pairs, deleting_pairs = [], []
        for tp in self.all_tps():
            for b in self.replicas(tp):
                if b in dead_set:
                    (deleting_pairs if tp.topic in self.to_delete else pairs).append((tp, b))
        self.elect_offline_and_new()
        self.remove_replicas_from_isr(pairs)
        if deleting_pairs:
            self.fail_replica_deletion(deleting_pairs)

    def on_broker_startup(self: "Controller", new: list[int]) -> None:
        new_set = set(new)
        if self.engine.state_log.enabled:                 # onBrokerStartup: their replicas go online
            for tp in self.all_tps():
                for b in sorted(new_set & set(self.replicas(tp))):
                    self.engine.state_log.replica_changed(self.id, self.epoch, self.engine.now(), tp, b,
                                                          "OfflineReplica", "OnlineReplica")
        self.elect_offline_and_new()
        for tp in sorted(self.reassigning):
            if self.exists(tp) and tp.topic not in self.to_delete:
                rs, _, rrs = self.full(tp)
                if new_set & {r for r in rs if r not in rrs}:
                    self.resume_reassignment(tp)
        self.resume_deletion_for_brokers(new_set)

    def controlled_shutdown(self: "Controller", broker: int) -> list[TopicPartition]:
        """ControlledShutdown RPC: move leaderships away, then drop it from the ISRs (§2.5). The answer,
        as 2.4.1's ``doControlledShutdown``: the partitions it still leads with other replicas (no other
        live in-sync replica took over); the broker retries while any remain."""
        self.shutting_down.add(broker)
        live = self.live_set()
        led, follows = [], []
        for tp in self.all_tps():
            cached = self.states.get(tp)
            if cached is None or tp.topic in self.to_delete or broker not in self.replicas(tp):
                continue
            if cached[0].leader == broker:
                if len(self.replicas(tp)) > 1:
                    led.append(tp)
            elif broker in cached[0].isr:
                follows.append(tp)
        sd = set(self.shutting_down)
        self.update_states((tp, lambda st, tp=tp: None if st.leader != broker else elections.controlled_shutdown(
            self.replicas(tp), st.isr, live, sd)) for tp in led)
        self.remove_replicas_from_isr((tp, broker) for tp in follows)
        return [tp for tp in led if tp in self.states and self.states[tp][0].leader == broker]
