"""The health model: check names, severities, thresholds, znode ages, findings, leader balance, report.

Pure data and arithmetic over a :class:`kafka_zk.model.ClusterSnapshot`; :func:`leader_balance`
is the per-broker leadership as Kafka's auto-rebalancer computes it (docs/zookeeper.md §2.8) and is also
what the election runbook reports before/after.

Failure: a threshold that makes no sense raises :class:`InvalidInput` naming the field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
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
class OwnedThrottle:
    """Throttles on a broker or topic that a live runbook run recorded as its own (not a leak)."""

    subject: str
    keys: tuple[str, ...]
    run: str
    folder: str

    def to_json(self) -> dict:
        return {"subject": self.subject, "keys": list(self.keys), "run": self.run, "folder": self.folder}


@dataclass(frozen=True)
class BrokerLeaderBalance:
    """Leadership of one broker as the auto-rebalancer sees it (docs/zookeeper.md §2.8)."""

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
    owned_throttles: tuple[OwnedThrottle, ...] = ()

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
                "owned_throttles": [o.to_json() for o in self.owned_throttles],
                "thresholds": {**asdict(self.thresholds), "severity": dict(self.thresholds.severity)}}


_PARTITION_CHECKS = (UNAVAILABLE, UNDER_MIN_ISR, UNDER_REPLICATED, AT_MIN_ISR)


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
