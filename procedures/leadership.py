"""Leadership, without Airflow: demote the brokers to remove, and the batched preferred election.

:func:`demote` moves leadership off the brokers to remove *before* data moves, so clients never
lose their leader mid-copy: (1) every partition whose preferred (first) replica is a registered
broker to remove gets its replica list re-ordered so the removed brokers come last — a same-set
reassignment the controller completes at once (docs/zookeeper.md §2.7.3) — then (2) a batched
preferred-replica election moves leadership to the new first replicas. A broker to remove that is
down leads nothing: it is neither re-ordered nor waited on. :func:`elect_preferred` is the final
election: every partition whose leader is not its preferred replica. What to re-order, elect and in
which batches is planned in :mod:`planning.election`; this module writes and waits.

Batches keep each znode ≤ 512 KiB; each is waited on (the controller deletes the node after one
pass) for up to ``wait_timeout`` seconds, polling with ``sleep`` (the wall clock, or a rehearsal's
simulated one). Both recompute what to do from the live cluster, so a retry does only what is left;
a node already present from an earlier attempt is waited on, not rewritten. With a dry-run writer
the writes are planned and audited, and nothing is waited on. The Airflow steps are
:mod:`operators.reassignment.leadership`; the rehearsal calls these on its copy.

Failure: a node the controller does not consume within ``wait_timeout`` raises :class:`TimeoutError`;
a re-ordering blocked by someone else's reassignment raises :class:`ReassignmentInProgress`;
partitions an election could not move are logged with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kafka_zk import paths
from kafka_zk.admin.election import submit_preferred_election
from kafka_zk.admin.reassignment import classify_live_reassignment, submit_reassignment
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import ReassignmentInProgress
from planning.election import demotion_targets, election_steps, reorder_batches
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import wait_node_gone
from kafka_zk.writer import ZkWriter


@dataclass(frozen=True)
class Waits:
    """How a leadership step waits for the controller: the bound, the poll sleep, the log."""

    log: Any
    wait_timeout: float = 120.0
    sleep: Callable[[float], None] = field(default=time.sleep)


def elect_preferred(client: Any, writer: ZkWriter, partitions: Sequence[TopicPartition] | None, waits: Waits) -> dict:
    """Batched preferred election of ``partitions`` (None: every partition), waiting each batch."""
    dry, log = writer.dry_run, waits.log
    if client.exists(paths.PREFERRED_REPLICA_ELECTION) is not None and not dry:
        log.info("an election node exists (earlier attempt or another tool): waiting for the controller")
        wait_node_gone(client, paths.PREFERRED_REPLICA_ELECTION, waits.wait_timeout, sleep=waits.sleep)
    snap = read_snapshot(client, with_configs=False)
    eligible, not_eligible, batches = election_steps(snap, partitions)
    for i, batch in enumerate(batches):
        if i:
            snap = read_snapshot(client, with_configs=False)
        submit_preferred_election(writer, snap, batch)
        log.info("election batch %d/%d: %d partition(s)%s", i + 1, len(batches), len(batch),
                 " (dry run: planned only)" if dry else "")
        if not dry:
            wait_node_gone(client, paths.PREFERRED_REPLICA_ELECTION, waits.wait_timeout, sleep=waits.sleep)
    for ne in not_eligible:
        if "already the leader" not in ne.reason:
            log.warning("not elected: %s: %s", ne.tp, ne.reason)
    return {"elected": len(eligible), "batches": len(batches),
            "not_eligible": [f"{ne.tp}: {ne.reason}" for ne in not_eligible if "already the leader" not in ne.reason]}


def _targets(snap: Any, removed: frozenset[int]) -> dict[TopicPartition, tuple[int, ...]]:
    """What to re-order: partitions preferred-led by a removed broker that is registered. A dead
    broker (down) leads nothing — the controller already moved its leaderships — so nothing is
    re-ordered or waited on for it."""
    return {tp: order for tp, order in demotion_targets(snap, removed).items()
            if snap.partition(tp).replicas[0] in snap.brokers}


def demote(client: Any, writer: ZkWriter, removed: frozenset[int], waits: Waits) -> dict:
    """Re-order replica lists so removed brokers are last, then elect preferred leaders."""
    dry, log = writer.dry_run, waits.log
    snap = read_snapshot(client, with_configs=False)
    dead = sorted(b for b in removed if b not in snap.brokers)
    if dead:
        log.info("broker(s) %s are down: they lead nothing (the controller moved their leaderships "
                 "when they died); nothing to demote for them", dead)
    targets = _targets(snap, removed)
    if snap.reassignment is not None and targets and not dry:
        if classify_live_reassignment(snap.reassignment, targets) != "ours":
            raise ReassignmentInProgress(
                f"cannot re-order {len(targets)} partition(s) led by brokers {sorted(removed)}: "
                f"/admin/reassign_partitions holds another reassignment "
                f"({len(snap.reassignment.entries)} partition(s)); wait for it, then clear demote")
        log.info("a re-ordering from an earlier attempt is in ZooKeeper: waiting for it")
        wait_node_gone(client, paths.REASSIGN_PARTITIONS, waits.wait_timeout, sleep=waits.sleep)
        snap = read_snapshot(client, with_configs=False)
        targets = _targets(snap, removed)
    batches = reorder_batches(targets)
    for i, batch in enumerate(batches):
        if i and not dry:
            snap = read_snapshot(client, with_configs=False)
        submit_reassignment(writer, snap, batch)
        log.info("re-order batch %d/%d: %d partition(s) now list removed brokers last%s",
                 i + 1, len(batches), len(batch), " (dry run: planned only)" if dry else "")
        if not dry:
            wait_node_gone(client, paths.REASSIGN_PARTITIONS, waits.wait_timeout, sleep=waits.sleep)
    led = [p.tp for p in read_snapshot(client, with_configs=False).partitions()
           if p.leader in removed or (dry and p.tp in targets)]
    result = elect_preferred(client, writer, led, waits)
    if not dry:
        still = [str(p.tp) for p in read_snapshot(client, with_configs=False).partitions() if p.leader in removed]
        if still:
            log.warning("%d partition(s) still led by a removed broker (no other replica in the ISR "
                        "to lead): %s", len(still), ", ".join(still[:10]))
        result["still_led_by_removed"] = still
    result["reordered"] = len(targets)
    result["dead"] = dead
    return result
