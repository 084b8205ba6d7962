"""Proposals: which anomaly of a health run becomes a proposed runbook run, kept one per anomaly.

Pure (no Airflow, no ZooKeeper): the health run hands in what it saw and the state of the runs it
proposed earlier; this module answers what to propose, what to cancel and what to keep. A
proposed run is an ordinary run of a runbook, triggered with its conf: it plans, rehearses and
then waits for a person's approval like any run — nothing here approves anything.

* :func:`find_anomalies` — the anomalies a proposal can fix, from a snapshot and its health
  report: a **broker down** (named in assignments, not registered) → ``decommission_brokers``
  of it; a **skew** of replica or preferred-leader counts beyond the rebalance targets →
  ``rebalance``; a **disk** above its threshold (with sizes and a capacity) → ``rebalance`` with
  the capacity file; a **leaked throttle** → ``stuck_reassignment`` (whose ``throttles`` fix
  removes the throttles no run of ours owns, behind its own approval); a **stuck reassignment** → ``stuck_reassignment``. Each has a key
  (:attr:`Anomaly.key`) that names it across health runs.
* :class:`Ledger` — per cluster, one :class:`Proposal` per anomaly key: when it was first and
  last seen, the run proposed for it (if any) and how that run stands. Plain JSON.
* :func:`decide` — the one decision: an anomaly seen long enough (its kind's wait: the broker-down
  grace, the skew's persistence) and without an open proposal is proposed (run id fixed before
  the trigger, so a retried trigger finds its own run); an open proposal is kept, never duplicated;
  a proposal whose anomaly is gone is cancelled while it still waits for its approval (a run
  already approved is left to finish); a proposal that ended is not proposed again before the
  cooldown.

Failure: :class:`InvalidInput` for a ledger file that is not one (named), an unknown kind or a
negative wait; nothing else raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from kafka_zk.errors import InvalidInput
from kafka_zk.health.model import LEAKED_THROTTLE, STUCK_REASSIGNMENT, HealthReport
from kafka_zk.model import ClusterSnapshot

BROKER_DOWN, SKEW, DISK = "broker_down", "skew", "disk"
KINDS = (BROKER_DOWN, SKEW, DISK, LEAKED_THROTTLE, STUCK_REASSIGNMENT)
RUNBOOK_OF = {BROKER_DOWN: "decommission_brokers", SKEW: "rebalance", DISK: "rebalance",
              LEAKED_THROTTLE: "stuck_reassignment", STUCK_REASSIGNMENT: "stuck_reassignment"}
RUN_ID_PREFIX = "proposal__"

#: how a proposed run stands, as the adapter reads it from Airflow
WAITING = "waiting"       # queued, or running and not approved yet (planning, rehearsing, asking)
APPROVED = "approved"     # running past its approval: it is writing, never cancelled
ENDED = "ended"           # success or failed (rejected, expired, cancelled, crashed)
MISSING = "missing"       # no such run (its trigger never landed)
RUN_STATES = (WAITING, APPROVED, ENDED, MISSING)


@dataclass(frozen=True)
class Anomaly:
    """Something a runbook run can repair: its kind, what it is about, what was seen, the run's conf."""

    kind: str
    subject: str
    evidence: str
    conf: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInput(f"anomaly kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.subject}"

    @property
    def runbook(self) -> str:
        return RUNBOOK_OF[self.kind]


@dataclass(frozen=True)
class SkewTargets:
    """The rebalance runbook's targets (its Params' defaults): counts may differ by at most these."""

    replica_spread: int = 1
    leader_spread: int = 1


@dataclass(frozen=True)
class DiskUse:
    """Bytes a broker holds against the most it may hold (capacity × threshold)."""

    broker: int
    used: int
    limit: int
    capacity: int


@dataclass(frozen=True)
class ProposalSettings:
    """Which kinds are on, how long each anomaly must last before it is proposed, the cooldown."""

    enabled: Mapping[str, bool] = field(default_factory=lambda: {k: True for k in KINDS})
    broker_down_grace_s: float = 1800.0
    skew_persist_s: float = 3600.0
    cooldown_s: float = 86400.0
    runbook_conf: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)   # added to its proposals' conf

    def __post_init__(self) -> None:
        for kind in self.enabled:
            if kind not in KINDS:
                raise InvalidInput(f"proposal kind {kind!r} is not one of {', '.join(KINDS)}")
        runbooks = sorted(set(RUNBOOK_OF.values()))
        for runbook, conf in self.runbook_conf.items():
            if runbook not in runbooks or not isinstance(conf, Mapping):
                raise InvalidInput(f"proposal_conf: {runbook!r} must be one of {', '.join(runbooks)} with an object of "
                                   'its Params, e.g. {"rebalance": {"throttle_bytes_per_sec": 104857600}}')
        for name in ("broker_down_grace_s", "skew_persist_s", "cooldown_s"):
            if not getattr(self, name) >= 0:
                raise InvalidInput(f"{name}={getattr(self, name)!r} must be seconds ≥ 0")

    def on(self, kind: str) -> bool:
        return bool(self.enabled.get(kind, False))

    def wait_s(self, kind: str) -> float:
        """How long an anomaly of ``kind`` must have been seen before it is proposed."""
        return {BROKER_DOWN: self.broker_down_grace_s, SKEW: self.skew_persist_s, DISK: self.skew_persist_s
                }.get(kind, 0.0)


# ---------------------------------------------------------------------------------------------
# anomalies


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(b) for b in sorted(ids))


def down_brokers(snapshot: ClusterSnapshot) -> dict[int, int]:
    """Brokers named in some partition's replicas that are not registered: id → replicas held."""
    held: dict[int, int] = {}
    for p in snapshot.partitions():
        for b in p.replicas:
            if b not in snapshot.brokers:
                held[b] = held.get(b, 0) + 1
    return held


def _counts(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> tuple[dict[int, int], dict[int, int]]:
    replicas = {b: 0 for b in brokers}
    leaders = dict(replicas)
    for p in snapshot.partitions():
        if snapshot.topics[p.topic].marked_for_deletion:
            continue
        for b in p.replicas:
            if b in replicas:
                replicas[b] += 1
        if p.replicas and p.replicas[0] in leaders:
            leaders[p.replicas[0]] += 1
    return replicas, leaders


def skew_of(snapshot: ClusterSnapshot, targets: SkewTargets, exclude: Iterable[int] = ()) -> str | None:
    """Why the live brokers (minus ``exclude``: retiring ones) are out of balance, or ``None``."""
    brokers = sorted(set(snapshot.brokers) - set(exclude))
    if len(brokers) < 2:
        return None
    replicas, leaders = _counts(snapshot, brokers)
    out = []
    for what, counts, target in (("replica", replicas, targets.replica_spread),
                                 ("preferred-leader", leaders, targets.leader_spread)):
        lo, hi = min(counts.values()), max(counts.values())
        if hi - lo > target:
            most = [b for b in brokers if counts[b] == hi]
            least = [b for b in brokers if counts[b] == lo]
            out.append(f"{what} counts differ by {hi - lo} (target {target}): broker(s) {_ids(most)} hold {hi}, "
                       f"broker(s) {_ids(least)} hold {lo}")
    return "; ".join(out) or None


def find_anomalies(snapshot: ClusterSnapshot, report: HealthReport, *, zk_conn_id: str,
                   targets: SkewTargets = SkewTargets(), disk: Iterable[DiskUse] = (),
                   capacity_file: str | None = None, sizes_file: str | None = None,
                   disk_threshold_pct: float | None = None, exclude: Iterable[int] = ()) -> list[Anomaly]:
    """Every anomaly a proposal can repair, sorted by key. ``disk`` is the per-broker use (empty
    without sizes or capacity) and ``sizes_file`` the sizes it was computed from (handed to the
    rebalance); ``exclude`` the retiring brokers (never a skew's fault). A data-moving proposal
    asks for a rehearsal (``rehearse: on``) whatever the cluster's size: its approver sees it."""
    base = {"zk_conn_id": zk_conn_id}
    moving_run = {**base, "rehearse": "on"}
    out: list[Anomaly] = []
    down = down_brokers(snapshot)
    for b, held in sorted(down.items()):
        out.append(Anomaly(BROKER_DOWN, f"broker {b}",
                           f"broker {b} is not registered under /brokers/ids and still holds {held} replica(s)",
                           {**moving_run, "brokers_to_remove": [b]}))
    moving = report.reassignment_running or bool(snapshot.reassigning_partitions())
    if not down and not moving:
        why = skew_of(snapshot, targets, exclude)
        if why:
            out.append(Anomaly(SKEW, "brokers", why, {**moving_run, "target_replica_spread": targets.replica_spread,
                                                      "target_leader_spread": targets.leader_spread}))
        full = sorted((u for u in disk if u.used > u.limit and u.broker in snapshot.brokers), key=lambda u: u.broker)
        if full and capacity_file:
            out.append(Anomaly(DISK, "brokers " + _ids(u.broker for u in full), "; ".join(
                f"broker {u.broker} holds {u.used} bytes, above its limit {u.limit} "
                f"({100.0 * u.used / u.capacity:.1f}% of {u.capacity})" for u in full),
                {**moving_run, "capacity_file": capacity_file,
                 **({"sizes_file": sizes_file} if sizes_file else {}),
                 **({"disk_threshold_pct": disk_threshold_pct} if disk_threshold_pct is not None else {})}))
    leaks = report.of(LEAKED_THROTTLE)
    if leaks:
        out.append(Anomaly(LEAKED_THROTTLE, "throttles", "; ".join(f.message for f in leaks), dict(base)))
    for f in report.of(STUCK_REASSIGNMENT):
        out.append(Anomaly(STUCK_REASSIGNMENT, f.subject, f"{f.message} ({f.cause})" if f.cause else f.message,
                           dict(base)))
    return sorted(out, key=lambda a: a.key)


# ---------------------------------------------------------------------------------------------
# the ledger


@dataclass(frozen=True)
class Proposal:
    """One anomaly across health runs and the run proposed for it (``run_id`` None: not yet)."""

    key: str
    kind: str
    runbook: str
    first_seen: str
    last_seen: str
    evidence: str
    conf: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    proposed_at: str | None = None
    proposed_by: str | None = None       # the health run that triggered it
    triggered: bool = False              # the trigger landed (else the next health run sends it again)
    ended_at: str | None = None

    def to_json(self) -> dict:
        return {**asdict(self), "conf": dict(self.conf)}


@dataclass(frozen=True)
class Ledger:
    """The proposals of one cluster, by anomaly key."""

    proposals: Mapping[str, Proposal] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"version": 1, "proposals": [p.to_json() for _, p in sorted(self.proposals.items())]},
                          indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str = "proposal ledger") -> "Ledger":
        try:
            doc = json.loads(text)
            items = [Proposal(**{**p, "conf": dict(p.get("conf") or {})}) for p in doc["proposals"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidInput(f"{where}: not a proposal ledger ({type(exc).__name__}: {str(exc)[:200]}); move it "
                               "aside and the next health run starts a new one") from None
        return cls({p.key: p for p in items})


# ---------------------------------------------------------------------------------------------
# the decision


@dataclass(frozen=True)
class Cancel:
    """A proposal whose anomaly is gone, still waiting for its approval: end it with ``note``."""

    proposal: Proposal
    note: str


@dataclass(frozen=True)
class Decision:
    """What one health run does: the new ledger, the runs to trigger and to cancel, what it keeps."""

    ledger: Ledger
    propose: tuple[Proposal, ...] = ()
    cancel: tuple[Cancel, ...] = ()
    open: tuple[Proposal, ...] = ()          # proposals waiting or running (besides ``propose``)
    waiting: tuple[tuple[Proposal, str], ...] = ()   # seen, not proposed yet, and why


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="seconds")


def _since(then: str, now: datetime) -> float:
    return (now - datetime.fromisoformat(then)).total_seconds()


def run_id_for(anomaly: Anomaly, now: datetime) -> str:
    """``proposal__broker_down__broker_5__20261202T010203``: the kind, the subject, the time."""
    subject = re.sub(r"[^A-Za-z0-9]+", "_", anomaly.subject).strip("_")[:60]
    return f"{RUN_ID_PREFIX}{anomaly.kind}__{subject}__{now.astimezone(timezone.utc):%Y%m%dT%H%M%S}"


def decide(ledger: Ledger, anomalies: Iterable[Anomaly], run_states: Mapping[str, str], now: datetime,
           settings: ProposalSettings, proposer: str, extra_conf: Mapping[str, Any] | None = None) -> Decision:
    """One health run's proposals (see the module docstring). ``run_states`` maps each proposed
    run id of the ledger to one of :data:`RUN_STATES` (absent: :data:`MISSING`); ``proposer`` names
    the health run; ``extra_conf`` is added to every new proposal's conf (run_root, notifications), then
    the settings' ``runbook_conf`` of its runbook (a deployment's throttle, Spark connection, …)."""
    seen = {a.key: a for a in anomalies}
    out: dict[str, Proposal] = {}
    propose, cancel, open_, waiting = [], [], [], []
    stamp = _iso(now)
    for key, p in sorted(ledger.proposals.items()):
        state = run_states.get(p.run_id, MISSING) if p.run_id else None
        if key in seen:
            continue
        if state == WAITING:
            cancel.append(Cancel(p, f"cancelled by {proposer} at {stamp}: the anomaly it was proposed for is gone "
                                    f"({p.key}; last seen {p.last_seen}: {p.evidence[:300]}); nothing was written"))
        elif state == APPROVED:
            out[key] = p            # approved and writing: left to finish, listed until it ends
            open_.append(p)
        elif state == MISSING and p.run_id and not p.triggered:
            continue                # the anomaly went before its trigger landed: nothing to cancel
    for key, a in sorted(seen.items()):
        p = ledger.proposals.get(key)
        if p is None:
            p = Proposal(key, a.kind, a.runbook, stamp, stamp, a.evidence)
        p = replace(p, last_seen=stamp, evidence=a.evidence)
        state = run_states.get(p.run_id, MISSING) if p.run_id else None
        if state in (WAITING, APPROVED):
            out[key] = replace(p, triggered=True)
            open_.append(out[key])
            continue
        if state == MISSING and not p.triggered:
            out[key] = p            # triggered before, not confirmed: send the same run id again
            propose.append(p)
            continue
        if p.run_id is not None:    # its run ended (or vanished): the cooldown, then a new proposal
            p = replace(p, ended_at=p.ended_at or stamp)
            left = settings.cooldown_s - _since(p.ended_at, now)
            if left > 0:
                out[key] = p
                waiting.append((p, f"proposal {p.run_id} ended; not proposed again for {left:.0f}s (cooldown)"))
                continue
            p = replace(p, first_seen=stamp, run_id=None, proposed_at=None, triggered=False, ended_at=None)
        if not settings.on(a.kind):
            out[key] = p
            waiting.append((p, f"proposals of kind {a.kind} are off (propose_{a.kind}=false)"))
            continue
        left = settings.wait_s(a.kind) - _since(p.first_seen, now)
        if left > 0:
            out[key] = p
            waiting.append((p, f"seen since {p.first_seen}; proposed when still seen after {left:.0f}s more"))
            continue
        conf = {**a.conf, **(extra_conf or {}), **settings.runbook_conf.get(a.runbook, {})}
        p = replace(p, conf=conf, run_id=run_id_for(a, now), proposed_at=stamp,
                    proposed_by=proposer, triggered=False, ended_at=None)
        out[key] = p
        propose.append(p)
    return Decision(Ledger(out), tuple(propose), tuple(cancel), tuple(open_), tuple(waiting))


def mark_triggered(ledger: Ledger, key: str) -> Ledger:
    """The ledger once the trigger of ``key``'s run has landed (or was found already there)."""
    return Ledger({**ledger.proposals, key: replace(ledger.proposals[key], triggered=True)})
