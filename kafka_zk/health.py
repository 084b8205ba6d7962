"""Cluster health: pure checks over a :class:`ClusterSnapshot` plus the ages of a few znodes.

What is checked (one check name each, :data:`CHECKS`):

* ``unavailable``, ``under_replicated``, ``under_min_isr``, ``at_min_isr`` — the partition
  predicates of ``kafka-topics --describe`` (contract §6.1, :mod:`kafka_zk.describe`), with
  ``min.insync.replicas`` known as on the API path: the topic override, else the ``<default>``
  broker config, else :attr:`HealthThresholds.default_min_isr`. Under-replicated uses the 2.6+
  rule (RF excludes adding replicas), so a running reassignment is not reported as lost
  replicas; a partition under min ISR is not also listed as at min ISR. Topics marked for deletion are left
  out (their partitions go leaderless on purpose; a stuck deletion is its own check).
* ``leader_imbalance`` — per broker B, among partitions whose preferred replica is B (topics
  being deleted excluded), the fraction whose state names another leader, against
  ``leader.imbalance.per.broker.percentage`` exactly as the auto-rebalancer computes it (§2.8).
* ``leaked_throttle`` — throttle rates on ``/config/brokers/*`` or throttled-replica lists on
  topics when no reassignment is running (a topic list is also leaked while one runs if none
  of the topic's partitions is moving).
* ``stuck_reassignment`` — ``/admin/reassign_partitions`` unchanged for longer than the
  threshold (or, for API-driven 2.4+ reassignments, a topic znode with adding/removing lists),
  with every partition not progressing and its likely cause.
* ``stuck_election`` — ``/admin/preferred_replica_election`` older than the threshold (the
  controller deletes it after one pass, so an old one means no controller is processing it).
* ``stuck_deletion`` — ``/admin/delete_topics/<t>`` older than the threshold, with the cause.

Only :func:`read_znode_ages` touches ZooKeeper (pipelined ``exists`` for the Stat of each
node); everything else is a pure function, so tests build snapshots from literals too. Ages
compare the ZooKeeper server's ``ctime``/``mtime`` with the local clock: with clock skew between
the two, thresholds shift by that skew.

Failure: a threshold that makes no sense (negative, percentage over 100, unknown severity)
raises :class:`InvalidInput` naming the field; ZooKeeper errors in :func:`read_znode_ages` are
translated as in :mod:`kafka_zk.snapshot`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.describe import is_unavailable, is_under_min_isr
from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot, Partition
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY
from kafka_zk.topic_configs import BROKER_THROTTLE_KEYS

UNAVAILABLE, UNDER_REPLICATED = "unavailable", "under_replicated"
UNDER_MIN_ISR, AT_MIN_ISR = "under_min_isr", "at_min_isr"
LEADER_IMBALANCE, LEAKED_THROTTLE = "leader_imbalance", "leaked_throttle"
STUCK_REASSIGNMENT, STUCK_ELECTION, STUCK_DELETION = "stuck_reassignment", "stuck_election", "stuck_deletion"
CHECKS = (UNAVAILABLE, UNDER_MIN_ISR, UNDER_REPLICATED, AT_MIN_ISR, LEADER_IMBALANCE, LEAKED_THROTTLE,
          STUCK_REASSIGNMENT, STUCK_ELECTION, STUCK_DELETION)
SEVERITIES = ("ok", "info", "warning", "critical")
DEFAULT_SEVERITY: Mapping[str, str] = {
    UNAVAILABLE: "critical", UNDER_MIN_ISR: "critical", UNDER_REPLICATED: "warning", AT_MIN_ISR: "warning",
    LEADER_IMBALANCE: "warning", LEAKED_THROTTLE: "warning", STUCK_REASSIGNMENT: "critical",
    STUCK_ELECTION: "warning", STUCK_DELETION: "warning"}


def severity_rank(severity: str) -> int:
    """0 for ``ok`` … 3 for ``critical``; :class:`InvalidInput` for anything else."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise InvalidInput(f"severity {severity!r} is not one of {', '.join(SEVERITIES)}") from None


@dataclass(frozen=True)
class HealthThresholds:
    """When a finding is raised, and how severe each check is (``severity`` overrides defaults)."""

    leader_imbalance_pct: float = 10.0
    stuck_reassignment_s: float = 3600.0
    stuck_election_s: float = 300.0
    stuck_deletion_s: float = 600.0
    default_min_isr: int = 1
    severity: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.leader_imbalance_pct <= 100:
            raise InvalidInput(f"leader_imbalance_pct={self.leader_imbalance_pct!r} must be a percentage "
                               "in [0, 100] (Kafka's leader.imbalance.per.broker.percentage, default 10)")
        for name in ("stuck_reassignment_s", "stuck_election_s", "stuck_deletion_s"):
            if not getattr(self, name) >= 0:
                raise InvalidInput(f"{name}={getattr(self, name)!r} must be seconds ≥ 0")
        if isinstance(self.default_min_isr, bool) or not isinstance(self.default_min_isr, int) \
                or self.default_min_isr < 1:
            raise InvalidInput(f"default_min_isr={self.default_min_isr!r} must be an integer ≥ 1 "
                               "(the brokers' min.insync.replicas)")
        for check, sev in self.severity.items():
            if check not in CHECKS:
                raise InvalidInput(f"severity override for unknown check {check!r}: use one of {', '.join(CHECKS)}")
            severity_rank(sev)

    def severity_of(self, check: str) -> str:
        return self.severity.get(check, DEFAULT_SEVERITY[check])


@dataclass(frozen=True)
class ZnodeAge:
    """Creation and last-modification time of one znode (ZooKeeper server clock, epoch ms)."""

    path: str
    ctime_ms: int
    mtime_ms: int


@dataclass(frozen=True)
class ZnodeAges:
    """The znode times the stuck-checks need, read at ``now_ms`` (local clock, epoch ms)."""

    now_ms: int
    reassignment: ZnodeAge | None = None
    election: ZnodeAge | None = None
    delete_markers: Mapping[str, ZnodeAge] = field(default_factory=dict)
    reassigning_topics: Mapping[str, ZnodeAge] = field(default_factory=dict)

    def since_ctime_s(self, age: ZnodeAge) -> float:
        return max(0.0, (self.now_ms - age.ctime_ms) / 1000.0)

    def since_mtime_s(self, age: ZnodeAge) -> float:
        return max(0.0, (self.now_ms - age.mtime_ms) / 1000.0)


def read_znode_ages(client, snapshot: ClusterSnapshot, now_ms: int | None = None) -> ZnodeAges:
    """Stat (pipelined ``exists``) of the admin nodes, delete markers and reassigning topic znodes."""
    from kafka_zk.snapshot import pipelined

    reassigning = sorted({p.topic for p in snapshot.partitions() if p.is_reassigning})
    wanted = [paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION]
    wanted += [paths.delete_topic_marker(t) for t in sorted(snapshot.delete_markers)]
    wanted += [paths.topic(t) for t in reassigning]
    stats = pipelined(client, "exists", wanted)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)

    def age(path: str) -> ZnodeAge | None:
        st = stats.get(path)
        return None if st is None else ZnodeAge(path, int(st.ctime), int(st.mtime))

    markers = {t: a for t in snapshot.delete_markers if (a := age(paths.delete_topic_marker(t)))}
    topics = {t: a for t in reassigning if (a := age(paths.topic(t)))}
    return ZnodeAges(now, age(paths.REASSIGN_PARTITIONS), age(paths.PREFERRED_REPLICA_ELECTION), markers, topics)


@dataclass(frozen=True)
class Finding:
    """One problem: which check, how severe, about what, why, and the partitions involved."""

    check: str
    severity: str
    subject: str
    message: str
    cause: str = ""
    partitions: tuple[TopicPartition, ...] = ()
    details: tuple[str, ...] = ()
    age_s: float | None = None

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["partitions"] = [str(tp) for tp in self.partitions]
        doc["details"] = list(self.details)
        return doc


@dataclass(frozen=True)
class BrokerLeaderBalance:
    """Leadership of one broker as the auto-rebalancer sees it (contract §2.8)."""

    broker: int
    live: bool
    preferred: int
    not_led: int
    leaders: int
    electable: int

    @property
    def imbalance_ratio(self) -> float:
        """Fraction of the partitions whose preferred replica is this broker that it does not lead."""
        return self.not_led / self.preferred if self.preferred else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "imbalance_ratio": round(self.imbalance_ratio, 6)}


def leader_balance(snapshot: ClusterSnapshot, assume_elected: Iterable[TopicPartition] = ()
                   ) -> tuple[BrokerLeaderBalance, ...]:
    """Per-broker leadership, every broker that is live or a preferred replica, sorted by id.

    ``assume_elected`` counts those partitions as led by their preferred replica (the balance
    predicted after a preferred election of exactly them). A partition without a state znode
    counts towards ``preferred`` but not ``not_led``, as in Kafka's rebalancer.
    """
    elected = set(assume_elected)
    brokers = set(snapshot.brokers)
    preferred: dict[int, int] = {}
    not_led: dict[int, int] = {}
    leaders: dict[int, int] = {}
    electable: dict[int, int] = {}
    for p in snapshot.partitions():
        if snapshot.topics[p.topic].marked_for_deletion or not p.replicas:
            continue
        pref = p.replicas[0]
        brokers.add(pref)
        preferred[pref] = preferred.get(pref, 0) + 1
        leader = pref if p.tp in elected else p.leader
        if leader is not None and leader >= 0:
            leaders[leader] = leaders.get(leader, 0) + 1
        if leader is not None and leader != pref:
            not_led[pref] = not_led.get(pref, 0) + 1
            if pref in snapshot.brokers and pref in p.isr:
                electable[pref] = electable.get(pref, 0) + 1
    return tuple(BrokerLeaderBalance(b, b in snapshot.brokers, preferred.get(b, 0), not_led.get(b, 0),
                                     leaders.get(b, 0), electable.get(b, 0)) for b in sorted(brokers))


@dataclass(frozen=True)
class HealthReport:
    """Every finding of one health run, the leader balance, and the thresholds used."""

    taken_at_ms: int
    brokers: tuple[int, ...]
    topic_count: int
    partition_count: int
    reassignment_running: bool
    findings: tuple[Finding, ...]
    leader_balance: tuple[BrokerLeaderBalance, ...]
    thresholds: HealthThresholds

    @property
    def worst(self) -> str:
        return max((f.severity for f in self.findings), key=severity_rank, default="ok")

    @property
    def clean(self) -> bool:
        return not self.findings

    def reaches(self, severity: str) -> bool:
        """True when some finding is at least ``severity`` (``ok`` is always reached)."""
        return severity_rank(self.worst) >= severity_rank(severity)

    def of(self, check: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.check == check)

    def partitions_of(self, check: str) -> tuple[TopicPartition, ...]:
        return tuple(sorted({tp for f in self.of(check) for tp in f.partitions}))

    def counts(self) -> dict[str, int]:
        """Per check: affected partitions, or findings for checks about brokers/topics/nodes."""
        return {c: (len(self.partitions_of(c)) if c in _PARTITION_CHECKS else len(self.of(c))) for c in CHECKS}

    def to_json(self) -> dict:
        return {"taken_at_ms": self.taken_at_ms, "brokers": list(self.brokers), "topics": self.topic_count,
                "partitions": self.partition_count, "reassignment_running": self.reassignment_running,
                "worst_severity": self.worst, "clean": self.clean, "counts": self.counts(),
                "findings": [f.to_json() for f in self.findings],
                "leader_balance": [b.to_json() for b in self.leader_balance],
                "thresholds": {**asdict(self.thresholds), "severity": dict(self.thresholds.severity)}}


_PARTITION_CHECKS = (UNAVAILABLE, UNDER_MIN_ISR, UNDER_REPLICATED, AT_MIN_ISR)


def check_health(snapshot: ClusterSnapshot, ages: ZnodeAges, thresholds: HealthThresholds | None = None
                 ) -> HealthReport:
    """Run every check; findings sorted by severity (worst first), then check order, then subject."""
    th = thresholds or HealthThresholds()
    balance = leader_balance(snapshot)
    findings = _partition_findings(snapshot, th)
    findings += _imbalance_findings(balance, th)
    findings += _leaked_throttles(snapshot, th)
    findings += _stuck_reassignments(snapshot, ages, th)
    findings += _stuck_election(snapshot, ages, th)
    findings += _stuck_deletions(snapshot, ages, th)
    findings.sort(key=lambda f: (-severity_rank(f.severity), CHECKS.index(f.check), f.subject))
    running = snapshot.reassignment is not None or bool(snapshot.reassigning_partitions())
    return HealthReport(snapshot.taken_at_ms, snapshot.live_broker_ids, len(snapshot.topics),
                        snapshot.partition_count, running, tuple(findings), balance, th)


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


def min_isr_of(snapshot: ClusterSnapshot, topic: str, default: int = 1) -> int:
    """Effective ``min.insync.replicas``: topic override, else ``<default>`` broker config, else ``default``."""
    for cfg in (snapshot.topics[topic].config, snapshot.broker_configs.get(paths.BROKER_DEFAULT_ENTITY, {})):
        value = cfg.get("min.insync.replicas")
        if value is not None and str(value).strip().isdigit():
            return int(value)
    return default


def throttle_keys_of_topic(config: Mapping[str, str]) -> dict[str, str]:
    """The non-empty throttled-replica lists of a topic config."""
    return {k: config[k] for k in (LEADER_KEY, FOLLOWER_KEY) if config.get(k, "").strip()}


def throttle_keys_of_broker(config: Mapping[str, str]) -> dict[str, str]:
    """The throttle rates set in a broker config entity."""
    return {k: config[k] for k in BROKER_THROTTLE_KEYS if k in config}



# ---------------------------------------------------------------------------------------------
# the checks


def _broker_list(ids: Iterable[int]) -> str:
    return ",".join(str(b) for b in sorted(set(ids)))


_PARTITION_TEXT = {
    UNAVAILABLE: "have no live leader (clients cannot produce or consume)",
    UNDER_REPLICATED: "are under-replicated (fewer in-sync replicas than the replication factor)",
    UNDER_MIN_ISR: "have fewer in-sync replicas than min.insync.replicas={m} (acks=all producers fail)",
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


def _leaked_throttles(snapshot: ClusterSnapshot, th: HealthThresholds) -> list[Finding]:
    sev = th.severity_of(LEAKED_THROTTLE)
    moving_topics = {p.topic for p in snapshot.partitions() if p.is_reassigning}
    if snapshot.reassignment is not None:
        moving_topics |= {e.topic for e in snapshot.reassignment.entries}
    running = snapshot.reassignment is not None or bool(moving_topics)
    out = []
    if not running:
        for entity in sorted(snapshot.broker_configs):
            keys = throttle_keys_of_broker(snapshot.broker_configs[entity])
            if keys:
                out.append(Finding(LEAKED_THROTTLE, sev, f"broker {entity}",
                                   f"/config/brokers/{entity} sets throttle rates with no reassignment running: "
                                   + ", ".join(f"{k}={v}" for k, v in sorted(keys.items())), _LEAK_CAUSE))
    for name in sorted(snapshot.topics):
        keys = throttle_keys_of_topic(snapshot.topics[name].config)
        if keys and name not in moving_topics:
            when = "while a reassignment runs, but none of its partitions is moving" if running \
                else "with no reassignment running"
            out.append(Finding(LEAKED_THROTTLE, sev, f"topic {name}",
                               f"/config/topics/{name} throttles replicas {when}: "
                               + ", ".join(f"{k}={v}" for k, v in sorted(keys.items())), _LEAK_CAUSE))
    return out


def _pending_reason(snapshot: ClusterSnapshot, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
    """Why the reassignment of ``tp`` to ``target`` is not finished (``None``: it is finished)."""
    if not snapshot.has_partition(tp):
        return ("the topic or partition no longer exists (deleted while reassigning, §2.7.5): the node stays "
                "until the controller changes")
    p = snapshot.partition(tp)
    if p.replicas == tuple(target) and not p.is_reassigning:
        return None
    dead = [b for b in target if b not in snapshot.brokers]
    if dead:
        return f"target broker(s) {_broker_list(dead)} not live (not registered under /brokers/ids)"
    if p.leader is None or p.leader < 0:
        return "the partition has no leader, so nothing is copied"
    lagging = [b for b in target if b not in p.isr]
    if lagging:
        return f"replica(s) on broker(s) {_broker_list(lagging)} not catching up (not in the ISR)"
    if not p.is_reassigning:
        return ("not started: the controller has not acted on this entry (a node created after a hand "
                "deletion is ignored until the controller changes, §2.7.1)")
    return "every target replica is in the ISR but the controller has not completed it"


def _reassignment_finding(subject: str, message: str, snapshot: ClusterSnapshot,
                          entries: Mapping[TopicPartition, tuple[int, ...]], idle: float,
                          th: HealthThresholds) -> Finding:
    pending = {tp: r for tp, t in sorted(entries.items()) if (r := _pending_reason(snapshot, tp, t))}
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
