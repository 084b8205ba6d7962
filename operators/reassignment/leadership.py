"""Leadership steps: demote the brokers to remove, and the final preferred-leader election.

**DemoteOperator** moves leadership off the brokers to remove *before* data moves, so clients
never lose their leader mid-copy. (1) Every partition whose preferred (first) replica is a
broker to remove gets its replica list re-ordered so the removed brokers come last — a same-set
reassignment, which the controller completes at once (docs/zookeeper.md §2.7.3: empty adding/removing);
(2) a batched preferred-replica election then moves leadership to the new first replicas. A broker
to remove that is down (dead) leads nothing: it is neither re-ordered nor waited on.
**ElectPreferredLeadersOperator** runs after the data moved and the throttles are gone: a
batched election of every partition whose leader is not its preferred replica. What to re-order,
elect and in which batches is planned in :mod:`planning.election` (the one planner of
elections, linear in partitions); this module only writes and waits.

Batches keep each znode ≤ 512 KiB; each batch is waited on (the controller deletes the node after
one pass) with a bounded wait. Both steps recompute what to do from the live cluster, so a retry
does only what is left; a node already present from an earlier attempt is waited on, not rewritten.
In a dry run the writes are planned and audited, and nothing is waited on.

Failure: a controller that does not consume a node within ``wait_timeout`` raises
:class:`TimeoutError`; a re-ordering blocked by someone else's reassignment raises
:class:`ReassignmentInProgress`; partitions an election could not move are logged with the reason.
A wave of this run still in flight (a resumed run) does not block: nothing is left to re-order.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from kafka_zk import paths
from kafka_zk.admin.election import submit_preferred_election
from kafka_zk.admin.reassignment import classify_live_reassignment, submit_reassignment
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import ReassignmentInProgress
from planning.election import demoted_order, demotion_targets, election_steps, reorder_batches
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import wait_node_gone
from operators.base import DecommissionStep, RunbookOperator

__all__ = ["DemoteOperator", "ElectPreferredLeadersOperator", "demoted_order", "demotion_targets", "reorder_batches"]


class _ElectionSteps(RunbookOperator):
    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "wait_timeout")

    def __init__(self, *, wait_timeout: Any = 120.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wait_timeout = wait_timeout

    def poll_sleep(self, seconds: float) -> None:
        """The wait between polls of the controller's progress (a rehearsal sleeps on simulated time)."""
        time.sleep(seconds)

    def _elect(self, client, writer, partitions: Sequence[TopicPartition] | None) -> dict:
        """Batched preferred election of ``partitions`` (None: every partition), waiting each batch."""
        if client.exists(paths.PREFERRED_REPLICA_ELECTION) is not None and not self.is_dry_run:
            self.log.info("an election node exists (earlier attempt or another tool): waiting for the controller")
            wait_node_gone(client, paths.PREFERRED_REPLICA_ELECTION, float(self.wait_timeout), sleep=self.poll_sleep)
        snap = read_snapshot(client, with_configs=False)
        eligible, not_eligible, batches = election_steps(snap, partitions)
        for i, batch in enumerate(batches):
            if i:
                snap = read_snapshot(client, with_configs=False)
            submit_preferred_election(writer, snap, batch)
            self.log.info("election batch %d/%d: %d partition(s)%s", i + 1, len(batches), len(batch),
                          " (dry run: planned only)" if self.is_dry_run else "")
            if not self.is_dry_run:
                wait_node_gone(client, paths.PREFERRED_REPLICA_ELECTION, float(self.wait_timeout), sleep=self.poll_sleep)
        for ne in not_eligible:
            if "already the leader" not in ne.reason:
                self.log.warning("not elected: %s: %s", ne.tp, ne.reason)
        return {"elected": len(eligible), "batches": len(batches),
                "not_eligible": [f"{ne.tp}: {ne.reason}" for ne in not_eligible if "already the leader" not in ne.reason]}


class DemoteOperator(_ElectionSteps, DecommissionStep):
    """Re-order replica lists so removed brokers are last, then elect preferred leaders."""

    template_fields: Sequence[str] = (*_ElectionSteps.template_fields, "brokers_to_remove")

    ui_color = "#fde2e2"

    def _targets(self, snap: Any, removed: frozenset[int]) -> dict[TopicPartition, tuple[int, ...]]:
        """What to re-order: partitions preferred-led by a removed broker that is registered. A dead
        broker (down) leads nothing — the controller already moved its leaderships — so nothing
        is re-ordered or waited on for it."""
        return {tp: order for tp, order in demotion_targets(snap, removed).items()
                if snap.partition(tp).replicas[0] in snap.brokers}

    def execute(self, context: Any) -> dict:
        removed = self.removed
        with self.session(context) as (client, writer):
            snap = read_snapshot(client, with_configs=False)
            dead = sorted(b for b in removed if b not in snap.brokers)
            if dead:
                self.log.info("broker(s) %s are down: they lead nothing (the controller moved their leaderships "
                              "when they died); nothing to demote for them", dead)
            targets = self._targets(snap, removed)
            if snap.reassignment is not None and targets and not self.is_dry_run:
                if classify_live_reassignment(snap.reassignment, targets) != "ours":
                    raise ReassignmentInProgress(
                        f"cannot re-order {len(targets)} partition(s) led by brokers {sorted(removed)}: "
                        f"/admin/reassign_partitions holds another reassignment "
                        f"({len(snap.reassignment.entries)} partition(s)); wait for it, then clear demote")
                self.log.info("a re-ordering from an earlier attempt is in ZooKeeper: waiting for it")
                wait_node_gone(client, paths.REASSIGN_PARTITIONS, float(self.wait_timeout), sleep=self.poll_sleep)
                snap = read_snapshot(client, with_configs=False)
                targets = self._targets(snap, removed)
            batches = reorder_batches(targets)
            for i, batch in enumerate(batches):
                if i and not self.is_dry_run:
                    snap = read_snapshot(client, with_configs=False)
                submit_reassignment(writer, snap, batch)
                self.log.info("re-order batch %d/%d: %d partition(s) now list removed brokers last%s",
                              i + 1, len(batches), len(batch), " (dry run: planned only)" if self.is_dry_run else "")
                if not self.is_dry_run:
                    wait_node_gone(client, paths.REASSIGN_PARTITIONS, float(self.wait_timeout), sleep=self.poll_sleep)
            led = [p.tp for p in read_snapshot(client, with_configs=False).partitions()
                   if p.leader in removed or (self.is_dry_run and p.tp in targets)]
            result = self._elect(client, writer, led)
            if not self.is_dry_run:
                still = [str(p.tp) for p in read_snapshot(client, with_configs=False).partitions()
                         if p.leader in removed]
                if still:
                    self.log.warning("%d partition(s) still led by a removed broker (no other replica in the ISR "
                                     "to lead): %s", len(still), ", ".join(still[:10]))
                result["still_led_by_removed"] = still
        result["reordered"] = len(targets)
        result["dead"] = dead
        return result


class ElectPreferredLeadersOperator(_ElectionSteps):
    """Batched preferred-replica election of every partition not led by its preferred replica."""

    ui_color = "#e2f0d9"

    def execute(self, context: Any) -> dict:
        with self.session(context) as (client, writer):
            return self._elect(client, writer, None)
