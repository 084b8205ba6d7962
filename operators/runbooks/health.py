"""The cluster_health runbook's steps: check, decide the hand-off, report, alert. Read-only.

* **HealthCheckOperator** reads the live cluster (:func:`kafka_zk.snapshot.read_snapshot`), the
  admin znodes' Stats (:func:`kafka_zk.health.read_znode_ages`) and the throttle records of the
  live runs under ``run_root`` (:func:`kafka_zk.health.find_throttle_owners`: their throttles
  are owned, not leaked), runs
  :func:`kafka_zk.health.check_health` and writes ``health.json`` (the JSON summary) to the run
  folder. It also decides the optional hand-off: leader imbalance above the threshold, the
  hand-off enabled, and now inside the maintenance window (:func:`in_window`).
* :func:`hand_off_wanted` is the ``ShortCircuitOperator`` callable that lets the
  ``trigger_election`` step (a standard ``TriggerDagRunOperator``) run or skips it.
* It also lists the anomalies a proposal can repair (:func:`procedures.proposals.find_anomalies`:
  a broker down, a skew, a full disk with a capacity file, a leaked throttle, a stuck
  reassignment) in ``health.json``; the ``propose`` step (:mod:`operators.runbooks.proposals`)
  turns them into proposed runs.
* **HealthReportOperator** renders ``templates/cluster_health/report.{md,html}.j2`` with every
  finding, the leader balance and the hand-off (the triggered run id when there was one).
* **HealthAlertOperator** fails when the worst finding reaches ``fail_on_severity``, so the
  DAG run fails and Airflow's alerting fires; ``ok`` never fails.

Maintenance windows are written ``"<days> HH:MM-HH:MM"`` in UTC: days ``*`` or a comma list of
``Mon``…``Sun``, e.g. ``"Sat,Sun 02:00-05:00"`` or ``"* 22:00-02:00"`` (a window may cross
midnight; it then belongs to the day it starts on).

Failure: a bad window, threshold or severity raises :class:`InvalidInput` naming the Param;
ZooKeeper errors as in :mod:`kafka_zk.snapshot`; the alert raises :class:`HealthAlert`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Sequence

from airflow.sdk import BaseOperator

from kafka_zk.capacity import read_capacity_file
from kafka_zk.errors import InvalidInput, KafkaZkError
from kafka_zk.health import (CHECKS, HealthThresholds, LEADER_IMBALANCE, check_health, find_throttle_owners,
                             read_znode_ages, severity_rank)
from procedures.proposals import DiskUse, SkewTargets, find_anomalies
from kafka_zk.log_dirs import encode_log_dirs
from kafka_zk.retiring import RetiringFile, cluster_id
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.base import as_bool
from procedures.plan.log_dirs_source import read_log_dirs
from procedures.plan.retiring import retiring_file
from operators.hooks.zookeeper import ZooKeeperHook
from operators.reports.final import render
from operators.reports.outcome import Facts, OutcomeNotifyOperator, OutcomeReportOperator
from operators.runtime import run_folder

HEALTH_FILE = "health.json"
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WINDOW = re.compile(r"^\s*(\*|[A-Za-z]{3}(?:\s*,\s*[A-Za-z]{3})*)\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


class HealthAlert(KafkaZkError):
    """The cluster has findings at or above the configured severity."""


def in_window(spec: str | None, now: datetime) -> bool:
    """Whether ``now`` (aware, any zone) is inside the maintenance window ``spec`` (UTC)."""
    if not spec or not str(spec).strip():
        return False
    m = _WINDOW.match(str(spec))
    if not m:
        raise InvalidInput(f"maintenance_window {spec!r} is not '<days> HH:MM-HH:MM' (UTC), e.g. "
                           "'Sat,Sun 02:00-05:00' or '* 22:00-02:00'")
    days_text, h1, m1, h2, m2 = m.groups()
    days = set(range(7)) if days_text == "*" else set()
    if days_text != "*":
        for d in days_text.split(","):
            d = d.strip().lower()
            if d not in DAYS:
                raise InvalidInput(f"maintenance_window {spec!r}: {d!r} is not a day (Mon … Sun)")
            days.add(DAYS.index(d))
    start, end = int(h1) * 60 + int(m1), int(h2) * 60 + int(m2)
    if not (0 <= start < 24 * 60 and 0 <= end <= 24 * 60 and int(m1) < 60 and int(m2) < 60) or start == end:
        raise InvalidInput(f"maintenance_window {spec!r}: times must be HH:MM in 00:00-24:00 and differ")
    now = now.astimezone(timezone.utc)
    minute = now.hour * 60 + now.minute
    if start < end:
        return now.weekday() in days and start <= minute < end
    # crosses midnight: evening part on a listed day, morning part on the day after a listed day
    return (now.weekday() in days and minute >= start) or \
        ((now - timedelta(days=1)).weekday() in days and minute < end)


def thresholds_from(values: Mapping[str, Any]) -> "HealthThresholds":
    """The Params of the check step as :class:`HealthThresholds` (validated there)."""

    return HealthThresholds(
        leader_imbalance_pct=float(values.get("leader_imbalance_pct", 10.0)),
        stuck_reassignment_s=float(values.get("stuck_reassignment_s", 3600.0)),
        stuck_election_s=float(values.get("stuck_election_s", 300.0)),
        stuck_deletion_s=float(values.get("stuck_deletion_s", 600.0)),
        default_min_isr=int(values.get("default_min_isr", 1)),
        severity=dict(values.get("severity") or {}))


def _disk_use(snap: Any, sizes: Any, capacity: Any) -> list[DiskUse]:
    """Bytes each live broker holds against its limit (capacity × threshold; unknown capacity: none)."""
    used: dict[int, int] = {b: 0 for b in snap.brokers}
    for (_, broker), size in sizes.items():
        if broker in used:
            used[broker] += int(size)
    out = []
    for b, n in sorted(used.items()):
        cap, limit = capacity.capacity(b), capacity.limit(b)
        if cap is not None and limit is not None:
            out.append(DiskUse(b, n, limit, cap))
    return out


class HealthCheckOperator(BaseOperator):
    """Run every health check on the live cluster; write ``health.json``; decide the hand-off."""

    template_fields: Sequence[str] = ("zk_conn_id", "run_root", "thresholds", "hand_off", "maintenance_window",
                                      "fail_on_severity", "proposal_args")
    ui_color = "#e8f4fd"

    def __init__(self, *, zk_conn_id: str, run_root: str, thresholds: Any = None, hand_off: Any = False,
                 maintenance_window: Any = None, fail_on_severity: Any = "critical", proposal_args: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id, self.run_root = zk_conn_id, run_root
        self.thresholds, self.hand_off = thresholds, hand_off
        self.maintenance_window, self.fail_on_severity = maintenance_window, fail_on_severity
        self.proposal_args = proposal_args

    def _anomalies(self, hook: ZooKeeperHook, client: Any, snap: Any, report: Any, folder: RunFolder) -> list[dict]:
        """What a proposal can repair (:func:`find_anomalies`), as JSON for the propose step."""
        args = dict(self.proposal_args or {})
        targets = SkewTargets(int(args.get("target_replica_spread", 1)), int(args.get("target_leader_spread", 1)))
        capacity_file = args.get("capacity_file") or None
        disk, sizes_file = [], None
        if capacity_file:
            capacity = read_capacity_file(str(capacity_file), args.get("disk_threshold_pct"))
            reading = read_log_dirs(hook.log_dirs_source(), client)
            if reading.sizes is None:
                self.log.warning("disk not judged: %s", reading.note)
            else:
                disk = _disk_use(snap, reading.sizes, capacity)
                per_broker: dict[int, dict] = {}
                for (tp, broker), size in reading.sizes.items():
                    per_broker.setdefault(broker, {})[tp] = size
                sizes_file = str(folder.write_text(folder.root / "log_dirs.json", encode_log_dirs(per_broker)))
        cid = cluster_id(client)
        retiring = RetiringFile.load(retiring_file(self.run_root)).of(cid) if cid is not None else {}
        found = find_anomalies(snap, report, zk_conn_id=str(self.zk_conn_id), targets=targets, disk=disk,
                               capacity_file=capacity_file, sizes_file=sizes_file,
                               disk_threshold_pct=float(args["disk_threshold_pct"]) if capacity_file else None,
                               exclude=retiring)
        return [{"key": a.key, "kind": a.kind, "subject": a.subject, "evidence": a.evidence, "runbook": a.runbook,
                 "conf": dict(a.conf)} for a in found]

    def execute(self, context: Any) -> dict:
        th = thresholds_from(self.thresholds or {})
        severity_rank(str(self.fail_on_severity))
        now = datetime.now(timezone.utc)
        window_open = in_window(self.maintenance_window, now)
        folder = run_folder(context, self.run_root)
        with ZooKeeperHook(self.zk_conn_id) as hook:
            client = hook.get_conn()
            snap = read_snapshot(client)
            ages = read_znode_ages(client, snap)
            owners = find_throttle_owners(self.run_root)
            report = check_health(snap, ages, th, owners)
            anomalies = self._anomalies(hook, client, snap, report, folder)
        for path in owners.unreadable:
            self.log.warning("throttle record %s cannot be read: its throttles, if any, are reported as leaks", path)
        for o in report.owned_throttles:
            self.log.info("throttle on %s owned by %s (%s): %s", o.subject, o.run, o.folder, ", ".join(o.keys))
        imbalance = report.of(LEADER_IMBALANCE)
        if not imbalance:
            reason = "no leader imbalance above the threshold"
        elif not as_bool(self.hand_off):
            reason = "leader imbalance found; hand-off to preferred_leader_election is disabled"
        elif not window_open:
            reason = (f"leader imbalance found, but now ({now:%a %H:%M} UTC) is outside the maintenance window "
                      f"{self.maintenance_window!r}: report only")
        else:
            reason = f"leader imbalance found inside the maintenance window {self.maintenance_window!r}"
        wanted = bool(imbalance) and as_bool(self.hand_off) and window_open
        doc = {**report.to_json(), "checked_at": now.isoformat(), "fail_on_severity": str(self.fail_on_severity),
               "hand_off": {"wanted": wanted, "reason": reason, "window": self.maintenance_window,
                            "window_open": window_open},
               "anomalies": anomalies}
        folder.write_json(folder.root / HEALTH_FILE, doc)
        for f in report.findings:
            self.log.warning("%s [%s] %s: %s%s", f.severity.upper(), f.check, f.subject, f.message,
                             f" — cause: {f.cause}" if f.cause else "")
        self.log.info("health: worst %s, counts %s; hand-off: %s", report.worst, report.counts(), reason)
        return {"worst": report.worst, "counts": report.counts(), "hand_off": wanted, "hand_off_reason": reason,
                "health_json": str(folder.root / HEALTH_FILE), "run_folder": str(folder.root)}


def hand_off_wanted(ti: Any = None, **_: Any) -> bool:
    """ShortCircuit callable: True when the ``check`` step decided to trigger the election runbook."""
    return bool((ti.xcom_pull(task_ids="check") or {}).get("hand_off"))


class HealthReportOperator(OutcomeReportOperator):
    """Render the Markdown and HTML health report from ``health.json`` (and the hand-off's triggered
    run), and fill the run's outcome contract: findings at or above ``fail_on_severity``, or
    proposals not made, are its cause (the run fails; ``ok``: never on findings)."""

    template_fields: Sequence[str] = (*OutcomeReportOperator.template_fields, "triggered_run_id", "fail_on_severity")

    def __init__(self, *, triggered_run_id: Any = None, fail_on_severity: Any = "critical", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.triggered_run_id, self.fail_on_severity = triggered_run_id, fail_on_severity

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        doc = folder.read_json(folder.root / HEALTH_FILE)
        if doc is None:
            return Facts(what="Cluster health", approvals=(), details_md="The check step did not run: no finding.")
        triggered = self.triggered_run_id if self.triggered_run_id not in (None, "", "None") else None
        doc["hand_off"]["triggered_run_id"] = triggered
        folder.write_json(folder.root / HEALTH_FILE, doc)
        values = {"h": doc, "dag_id": context["dag"].dag_id, "run_id": context["run_id"], "checks": CHECKS,
                  "findings_by_severity": {s: [f for f in doc["findings"] if f["severity"] == s]
                                           for s in ("critical", "warning", "info")}}
        md, html = folder.root / "health_report.md", folder.root / "health_report.html"
        folder.write_text(md, render("cluster_health/report.md.j2", **values))
        folder.write_text(html, render("cluster_health/report.html.j2", **values))
        self.log.info("health report (%s): %s", doc["worst_severity"], md)
        return Facts(what="Cluster health", approvals=(), details_md=md.read_text(encoding="utf-8"),
                     plan_md=md.read_text(encoding="utf-8"),
                     summary=f"worst finding: {doc['worst_severity']}; {len(doc['findings'])} finding(s)",
                     unfinished=alert_cause(doc, str(self.fail_on_severity)), pages={"health report": html.name},
                     next_step="Read the findings in the health report and act on them (or on the proposed runs).")


def alert_cause(doc: Mapping[str, Any], limit: str) -> str:
    """Why a health run fails, in one sentence (empty: it does not): proposals not made or not
    cancelled, or findings at or above ``limit`` (``ok``: never on findings)."""
    errors = (doc.get("proposals") or {}).get("errors") or []
    if errors:
        return f"{len(errors)} proposal(s) not made or not cancelled: " + "; ".join(errors[:5])
    if limit != "ok" and severity_rank(doc["worst_severity"]) >= severity_rank(limit):
        worst = [f for f in doc["findings"] if severity_rank(f["severity"]) >= severity_rank(limit)]
        return f"{len(worst)} finding(s) at or above {limit}: " + "; ".join(
            f"[{f['check']}] {f['subject']}: {f['message']}" for f in worst[:10])
    return ""


class HealthAlertOperator(OutcomeNotifyOperator):
    """The health run's last step: its note from the outcome contract, and a :class:`HealthAlert`
    (the run fails) naming the findings when the report found them at or above ``fail_on_severity``.
    Nothing is sent: the run's ``notify_conn_ids`` are the proposed runs' channels."""

    ui_color = "#f4cccc"
    failure = HealthAlert

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("deliver", False)
        super().__init__(**kwargs)
