"""The checks themselves: :func:`check_health` runs them all over a snapshot and znode ages.

Each check returns :class:`Finding` values naming the subject (topic, broker or znode), the
partitions involved and the likely cause in Kafka's terms (sections of docs/zookeeper.md in brackets).

Failure: none of its own; every input was validated when the thresholds were built.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kafka_zk import paths
from kafka_zk.admin.stuck import broker_list as _broker_list
from kafka_zk.admin.stuck import pending_cause
from kafka_zk.codecs import TopicPartition
from kafka_zk.describe import is_unavailable, is_under_min_isr
from kafka_zk.health.model import (AT_MIN_ISR, CHECKS, LEADER_IMBALANCE, LEAKED_THROTTLE, STUCK_DELETION,
                                   STUCK_ELECTION, STUCK_REASSIGNMENT, UNAVAILABLE, UNDER_MIN_ISR, UNDER_REPLICATED,
                                   BrokerLeaderBalance, Finding, HealthReport, HealthThresholds, OwnedThrottle,
                                   ZnodeAges,
                                   leader_balance, min_isr_of, severity_rank, throttle_keys_of_broker,
                                   throttle_keys_of_topic)
from kafka_zk.health.owners import ThrottleOwners
from kafka_zk.model import ClusterSnapshot, Partition


def check_health(snapshot: ClusterSnapshot, ages: ZnodeAges, thresholds: HealthThresholds | None = None,
                 owners: ThrottleOwners | None = None) -> HealthReport:
    """Run every check; findings sorted by severity (worst first), then check order, then subject.

    ``owners``: the live runbook runs' throttle records (:func:`find_throttle_owners`); the
    throttles they cover are reported as owned by that run, not as leaks.
    """
    th = thresholds or HealthThresholds()
    owned: list[OwnedThrottle] = []
    balance = leader_balance(snapshot)
    findings = _partition_findings(snapshot, th)
    findings += _imbalance_findings(balance, th)
    findings += _leaked_throttles(snapshot, th, owners or ThrottleOwners(), owned)
    findings += _stuck_reassignments(snapshot, ages, th)
    findings += _stuck_election(snapshot, ages, th)
    findings += _stuck_deletions(snapshot, ages, th)
    findings.sort(key=lambda f: (-severity_rank(f.severity), CHECKS.index(f.check), f.subject))
    running = snapshot.reassignment is not None or bool(snapshot.reassigning_partitions())
    return HealthReport(snapshot.taken_at_ms, snapshot.live_broker_ids, len(snapshot.topics),
                        snapshot.partition_count, running, tuple(findings), balance, th, tuple(owned))


def _imbalance_findings(balance: Iterable[BrokerLeaderBalance], th: HealthThresholds) -> list[Finding]:
    out = []
    limit = th.leader_imbalance_pct / 100.0
    for b in balance:
        if b.preferred == 0 or b.imbalance_ratio <= limit:
            continue
        if not b.live:
            cause = f"broker {b.broker} is not live: its partitions are led by other replicas until it returns"
        elif b.electable == b.not_led:
            cause = f"all {b.electable} can be moved back by a preferred leader election"
        else:
            cause = (f"{b.electable} can be moved back by a preferred leader election; the other "
                     f"{b.not_led - b.electable} wait until broker {b.broker} is back in their ISR")
        out.append(Finding(LEADER_IMBALANCE, th.severity_of(LEADER_IMBALANCE), f"broker {b.broker}",
                           f"broker {b.broker} leads {b.preferred - b.not_led} of the {b.preferred} partitions "
                           f"whose preferred replica it is: imbalance {b.imbalance_ratio:.1%} > "
                           f"{th.leader_imbalance_pct:g}% (leader.imbalance.per.broker.percentage)", cause))
    return out


# ---------------------------------------------------------------------------------------------
# the checks


_PARTITION_TEXT = {
    UNAVAILABLE: "have no live leader (clients cannot produce or consume)",
    UNDER_REPLICATED: "are under-replicated (fewer in-sync replicas than the replication factor)",
    UNDER_MIN_ISR: "have no leader or fewer in-sync replicas than min.insync.replicas={m} (acks=all producers fail)",
    AT_MIN_ISR: "are at min.insync.replicas={m} (one more lost replica blocks acks=all producers)",
}


def _partition_findings(snapshot: ClusterSnapshot, th: HealthThresholds) -> list[Finding]:
    live = snapshot.brokers
    live_ids = set(live)
    groups: dict[tuple[str, str, str], list[Partition]] = {}
    for p in snapshot.partitions():
        if snapshot.topics[p.topic].marked_for_deletion:
            continue
        min_isr = min_isr_of(snapshot, p.topic, th.default_min_isr)
        rf = len(p.replicas) - len(p.adding)
        hits = []
        if is_unavailable(p, live_ids):
            hits.append(UNAVAILABLE)
        if rf - len(p.isr) > 0:
            hits.append(UNDER_REPLICATED)
        if is_under_min_isr(p) or len(p.isr) < min_isr:
            hits.append(UNDER_MIN_ISR)
        elif len(p.isr) == min_isr:
            hits.append(AT_MIN_ISR)
        for check in hits:
            sev = "info" if check == AT_MIN_ISR and rf <= min_isr else th.severity_of(check)
            groups.setdefault((check, p.topic, sev), []).append(p)
    out = []
    for (check, topic, sev), parts in sorted(groups.items(), key=lambda kv: (CHECKS.index(kv[0][0]), kv[0][1:])):
        dead = {r for p in parts for r in p.replicas if r not in live}
        lagging = {r for p in parts for r in p.replicas if r in live and r not in p.isr}
        causes = []
        if dead:
            causes.append(f"replicas on broker(s) {_broker_list(dead)} that are not live")
        if lagging:
            causes.append(f"replicas on live broker(s) {_broker_list(lagging)} not in the ISR (catching up)")
        if any(p.leader is None for p in parts):
            causes.append("partitions without a state znode (never initialised: no assigned replica was live)")
        details = tuple(f"{p.tp}: leader {p.leader if p.leader is not None and p.leader >= 0 else 'none'}, "
                        f"replicas [{','.join(map(str, p.replicas))}], ISR [{','.join(map(str, p.isr))}]"
                        for p in parts)
        text = _PARTITION_TEXT[check].format(m=min_isr_of(snapshot, topic, th.default_min_isr))
        if sev == "info":
            text += "; the replication factor equals min.insync.replicas, so this is by design"
        out.append(Finding(check, sev, f"topic {topic}",
                           f"{len(parts)} of {len(snapshot.topics[topic].partitions)} partition(s) of topic "
                           f"{topic} {text}", "; ".join(causes), tuple(p.tp for p in parts), details))
    return out


_LEAK_CAUSE = ("left behind by a reassignment that was never verified (kafka-reassign-partitions --verify "
               "removes throttles) or a run that failed before its cleanup: remove them with the throttle "
               "command, or they slow every future catch-up of these replicas")


def _owned(owners: ThrottleOwners, kind: str, entity: str, subject: str, keys: Mapping[str, str],
           owned: list[OwnedThrottle]) -> bool:
    run = owners.owner_of(kind, entity)
    if run is None:
        return False
    owned.append(OwnedThrottle(subject, tuple(f"{k}={v}" for k, v in sorted(keys.items())), run.name, run.folder))
    return True


def _leaked_throttles(snapshot: ClusterSnapshot, th: HealthThresholds, owners: ThrottleOwners,
                      owned: list[OwnedThrottle]) -> list[Finding]:
    """Throttles no running reassignment needs and no live runbook run recorded as its own."""
    sev = th.severity_of(LEAKED_THROTTLE)
    moving_topics = {p.topic for p in snapshot.partitions() if p.is_reassigning}
    if snapshot.reassignment is not None:
        moving_topics |= {e.topic for e in snapshot.reassignment.entries}
    running = snapshot.reassignment is not None or bool(moving_topics)
    out = []
    if not running:
        for entity in sorted(snapshot.broker_configs):
            keys = throttle_keys_of_broker(snapshot.broker_configs[entity])
            if keys and not _owned(owners, "broker", entity, f"broker {entity}", keys, owned):
                out.append(Finding(LEAKED_THROTTLE, sev, f"broker {entity}",
                                   f"/config/brokers/{entity} sets throttle rates with no reassignment running: "
                                   + ", ".join(f"{k}={v}" for k, v in sorted(keys.items())), _LEAK_CAUSE))
    for name in sorted(snapshot.topics):
        keys = throttle_keys_of_topic(snapshot.topics[name].config)
        if keys and name not in moving_topics and \
                not _owned(owners, "topic", name, f"topic {name}", keys, owned):
            when = "while a reassignment runs, but none of its partitions is moving" if running \
                else "with no reassignment running"
            out.append(Finding(LEAKED_THROTTLE, sev, f"topic {name}",
                               f"/config/topics/{name} throttles replicas {when}: "
                               + ", ".join(f"{k}={v}" for k, v in sorted(keys.items())), _LEAK_CAUSE))
    return out


def _reason(snapshot: ClusterSnapshot, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
    cause = pending_cause(snapshot, tp, target)
    return None if cause is None else cause.text


def _reassignment_finding(subject: str, message: str, snapshot: ClusterSnapshot,
                          entries: Mapping[TopicPartition, tuple[int, ...]], idle: float,
                          th: HealthThresholds) -> Finding:
    pending = {tp: r for tp, t in sorted(entries.items()) if (r := _reason(snapshot, tp, t))}
    causes = sorted(set(pending.values()))
    if not pending:
        causes = ["every entry is complete but the node was not deleted: the controller is not processing "
                  "it (hand-deleted earlier or an invalid document, §1.7); bounce the controller"]
    if snapshot.controller_id is None:
        causes.insert(0, "no active controller (/controller is absent)")
    return Finding(STUCK_REASSIGNMENT, th.severity_of(STUCK_REASSIGNMENT), subject,
                   f"{message}: {len(pending)} of {len(entries)} partition(s) not progressing",
                   "; ".join(causes), tuple(pending), tuple(f"{tp}: {r}" for tp, r in pending.items()),
                   round(idle, 1))


def _stuck_reassignments(snapshot: ClusterSnapshot, ages: ZnodeAges, th: HealthThresholds) -> list[Finding]:
    out = []
    in_node: set[TopicPartition] = set()
    if snapshot.reassignment is not None and ages.reassignment is not None:
        targets = snapshot.reassignment.targets()
        in_node = set(targets)
        idle = ages.since_mtime_s(ages.reassignment)
        if idle > th.stuck_reassignment_s:
            out.append(_reassignment_finding(
                paths.REASSIGN_PARTITIONS,
                f"{paths.REASSIGN_PARTITIONS} unchanged for {idle:.0f}s (threshold {th.stuck_reassignment_s:g}s; "
                f"created {ages.since_ctime_s(ages.reassignment):.0f}s ago)", snapshot, targets, idle, th))
    by_topic: dict[str, dict[TopicPartition, tuple[int, ...]]] = {}
    for p in snapshot.partitions():
        if p.is_reassigning and p.tp not in in_node:
            by_topic.setdefault(p.topic, {})[p.tp] = p.target
    for name, targets in sorted(by_topic.items()):
        age = ages.reassigning_topics.get(name)
        if age is None:
            continue
        idle = ages.since_mtime_s(age)
        if idle > th.stuck_reassignment_s:
            out.append(_reassignment_finding(
                f"topic {name}", f"topic {name} has had adding/removing replicas (an API-driven reassignment) "
                f"with no change for {idle:.0f}s (threshold {th.stuck_reassignment_s:g}s)",
                snapshot, targets, idle, th))
    return out


def _stuck_election(snapshot: ClusterSnapshot, ages: ZnodeAges, th: HealthThresholds) -> list[Finding]:
    if snapshot.preferred_election is None or ages.election is None:
        return []
    age = ages.since_ctime_s(ages.election)
    if age <= th.stuck_election_s:
        return []
    if snapshot.controller_id is None:
        cause = "no active controller (/controller is absent): the node is processed when one is elected"
    else:
        cause = (f"controller {snapshot.controller_id} has not processed it (the controller deletes it after one "
                 "pass, even when elections fail); bounce the controller (delete /controller) so that the new "
                 "one reads it at failover (§2.1 step 8)")
    parts = snapshot.preferred_election.partitions
    return [Finding(STUCK_ELECTION, th.severity_of(STUCK_ELECTION), paths.PREFERRED_REPLICA_ELECTION,
                    f"{paths.PREFERRED_REPLICA_ELECTION} exists for {age:.0f}s (threshold {th.stuck_election_s:g}s) "
                    f"with {len(parts)} partition(s)", cause, tuple(parts), (), round(age, 1))]


def _stuck_deletions(snapshot: ClusterSnapshot, ages: ZnodeAges, th: HealthThresholds) -> list[Finding]:
    out = []
    for name in sorted(snapshot.delete_markers):
        age_node = ages.delete_markers.get(name)
        if age_node is None:
            continue
        age = ages.since_ctime_s(age_node)
        if age <= th.stuck_deletion_s:
            continue
        causes, parts = [], ()
        topic = snapshot.topics.get(name)
        if snapshot.controller_id is None:
            causes.append("no active controller (/controller is absent)")
        if topic is None:
            causes.append("the topic does not exist: a controller deletes such markers at once, so none is "
                          "processing /admin/delete_topics")
        else:
            dead = {r for p in topic.partitions.values() for r in p.replicas if r not in snapshot.brokers}
            moving = tuple(p.tp for p in topic.partitions.values() if p.is_reassigning)
            if dead:
                causes.append(f"replicas on broker(s) {_broker_list(dead)} that are not live: deletion waits "
                              "until they register again (§2.9)")
                parts = tuple(sorted(p.tp for p in topic.partitions.values()
                                     if any(r not in snapshot.brokers for r in p.replicas)))
            if moving:
                causes.append(f"partition(s) {', '.join(map(str, moving))} are being reassigned: deletion "
                              "waits for the reassignment")
                parts = tuple(sorted(set(parts) | set(moving)))
            if not causes:
                causes.append("no blocking condition found: the controller is not processing deletions "
                              "(brokers with delete.topic.enable=false, or a controller that missed the "
                              "marker; a controller change makes it re-read /admin/delete_topics)")
        out.append(Finding(STUCK_DELETION, th.severity_of(STUCK_DELETION), f"topic {name}",
                           f"topic {name} is marked for deletion for {age:.0f}s (threshold {th.stuck_deletion_s:g}s)",
                           "; ".join(causes), parts, (), round(age, 1)))
    return out
