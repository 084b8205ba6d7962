"""Preferred replica election (docs/zookeeper.md §2.8, 2.2+ rules) and the auto leader rebalance.

``/admin/preferred_replica_election`` is acted on when created (and at failover): partitions
that do not exist or whose topic is queued for deletion are skipped, so are partitions already
led by their preferred replica; the others get leader := preferred replica only if it is live
and in the ISR (ISR unchanged, epoch +1), otherwise nothing is written. The node is always
deleted afterwards and an event queued that re-arms the watch and checks existence (2.4.1), so
a node created right after the deletion is acted on. An unreadable node is deleted too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Iterable

from kazoo.exceptions import NoNodeError

from kafka_sim import elections
from kafka_sim.phases import Phase
from kafka_sim.spec import LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
from kafka_sim.zk_io import Op
from kafka_zk import paths
from kafka_zk.codecs import InvalidPayload, TopicPartition, decode_preferred_election

if TYPE_CHECKING:
    from kafka_sim.controller import Controller

log = logging.getLogger(__name__)


class PreferredMixin:
    """Preferred-election reactions of :class:`kafka_sim.controller.Controller`."""

    def preferred_watcher(self: "Controller") -> Callable:
        return self.watcher("preferred", None, ("CREATED",))

    def on_preferred_created(self: "Controller") -> None:
        self.process_preferred_node()

    def process_preferred_node(self: "Controller") -> None:
        if self.zk.exists(paths.PREFERRED_REPLICA_ELECTION, watch=self.preferred_watcher()) is None:
            return
        try:
            data, _ = self.zk.get(paths.PREFERRED_REPLICA_ELECTION)
            tps = list(dict.fromkeys(decode_preferred_election(data).partitions))
        except NoNodeError:
            return
        except InvalidPayload as exc:
            log.warning("invalid preferred replica election node: %s", exc)
            tps = []
        self.elect_preferred(tps)
        self.fenced.write(Op("delete", paths.PREFERRED_REPLICA_ELECTION))
        # 2.4.1: "Ensure we detect future preferred replica leader elections" — an event queued
        # after the delete re-arms the watch and checks existence (a node created in between)
        self.engine.post(("controller", self, "preferred", None))

    def elect_preferred(self: "Controller", tps: Iterable[TopicPartition]) -> None:
        live = self.live_set()
        todo = []
        for tp in tps:
            if not self.exists(tp) or tp.topic in self.to_delete or tp not in self.states:
                continue
            replicas = self.replicas(tp)
            if self.states[tp][0].leader == replicas[0]:
                continue                                  # ELECTION_NOT_NEEDED (2.2+)
            todo.append(tp)
        def elect(st, tp):
            preferred = elections.preferred(self.replicas(tp), st.isr, live)
            return None if preferred is None or preferred == st.leader else (preferred, st.isr)
        self.update_states((tp, lambda st, tp=tp: elect(st, tp)) for tp in todo)

    def auto_rebalance(self: "Controller") -> None:
        """``auto.leader.rebalance.enable``: per broker, elect preferred leaders when more than
        10% of its preferred partitions are led elsewhere; skipped while anything is being
        reassigned (1.x–3.3)."""
        if any(r.phase is not Phase.IDLE for r in self.reassigning.values()):
            return
        live = self.live_set()
        by_pref: dict[int, list[TopicPartition]] = {}
        for tp in self.all_tps():
            if tp.topic in self.to_delete or tp not in self.states:
                continue
            by_pref.setdefault(self.replicas(tp)[0], []).append(tp)
        todo = []
        for broker in sorted(by_pref):
            tps = by_pref[broker]
            off = [tp for tp in tps if self.states[tp][0].leader != broker]
            if len(off) * 100.0 / len(tps) > LEADER_IMBALANCE_PER_BROKER_PERCENTAGE:
                todo += [tp for tp in off
                         if elections.preferred(self.replicas(tp), self.states[tp][0].isr, live) is not None]
        if todo:
            self.elect_preferred(todo)
