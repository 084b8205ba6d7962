"""GuardsOperator: the last read-only checks before anything is written to the cluster.

Checks, all against the *live* cluster, every problem collected before refusing:

1. the plan on disk is the approved one (hash; skipped in a dry run, which writes nothing);
2. every broker to remove, and every broker the plan moves replicas onto, is registered
   (``/brokers/ids``);
3. no reassignment is running: ``/admin/reassign_partitions`` absent, no partition with
   adding/removing replicas — unless it is this run's own wave (a cleared or retried run);
4. the plan is not stale: every planned partition still has the replica *set* the plan assumed
   (order may differ: demotion re-orders), or already has its target (a resumed run).

5. a runbook's own guards: a subclass overrides :meth:`GuardsOperator.extra_problems`.

The result goes to ``guards.json`` in the run folder. Failure: :class:`ReassignmentInProgress`,
:class:`StalePlan`, :class:`BrokerNotAvailable` (the first problem's type; the message lists all).
"""

from __future__ import annotations

from typing import Any

from kafka_zk.admin.reassignment import classify_live_reassignment
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import BrokerNotAvailable, KafkaZkError, ReassignmentInProgress, StalePlan
from kafka_zk.model import ClusterSnapshot
from kafka_zk.snapshot import read_snapshot
from operators.base import DecommissionStep
from operators.runtime import plan_hash, require_approval
from spark_jobs.artifacts import load_plan_artifacts

SHOWN = 10


def reassignment_problems(snap: ClusterSnapshot, plan_targets: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """Why a reassignment already running blocks this run (empty: none, or only ours)."""
    problems = []
    kind = classify_live_reassignment(snap.reassignment, plan_targets)
    if kind == "foreign":
        entries = snap.reassignment.entries
        shown = ", ".join(f"{e.tp} → {list(e.replicas)}" for e in entries[:SHOWN])
        problems.append(f"a reassignment is already in progress: /admin/reassign_partitions holds {len(entries)} "
                        f"partition(s) this plan did not submit ({shown}). Wait for it to finish "
                        "(kafka-reassign-partitions --verify) or cancel it, then trigger this runbook again")
    moving = [p for p in snap.partitions() if p.is_reassigning
              and tuple(plan_targets.get(p.tp, ())) != p.target]
    if moving:
        shown = ", ".join(f"{p.tp} (adding {list(p.adding)}, removing {list(p.removing)})" for p in moving[:SHOWN])
        problems.append(f"{len(moving)} partition(s) are being reassigned by someone else: {shown}. Wait for that "
                        "reassignment to finish, then trigger this runbook again")
    return problems


def stale_problems(snap: ClusterSnapshot, current: dict[TopicPartition, tuple[int, ...]],
                   target: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """Partitions whose live replicas are neither the assumed set nor the planned target."""
    bad = []
    for tp in sorted(target):
        if not snap.has_partition(tp):
            bad.append(f"{tp}: no longer exists")
            continue
        live = snap.partition(tp)
        if tuple(live.replicas) == tuple(target[tp]) or live.target == tuple(target[tp]):
            continue
        if set(live.replicas) != set(current.get(tp, ())):
            bad.append(f"{tp}: plan assumed replicas {list(current.get(tp, ()))}, cluster has {list(live.replicas)}")
    if not bad:
        return []
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    return [f"plan is stale, re-plan: {len(bad)} partition(s) changed since the snapshot: "
            + "; ".join(bad[:SHOWN]) + more]


class GuardsOperator(DecommissionStep):
    """Refuse to go on when the cluster or the plan is not what was approved."""

    ui_color = "#fff3cd"

    def extra_problems(self, snap: ClusterSnapshot, plan: Any) -> list[tuple[type[KafkaZkError], str]]:
        """A runbook's own guards against the live snapshot and the plan artifacts: each problem as
        (error type, message naming the problem and the fix); none by default."""
        return []

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        checks: list[str] = []
        problems: list[tuple[type[KafkaZkError], str]] = []
        if self.is_dry_run:
            digest = plan_hash(folder.plan_dir)
            checks.append(f"dry run: approval not required (plan {digest[:12]}…)")
        else:
            record = require_approval(folder)
            checks.append(f"plan {record.plan_hash[:12]}… approved ({record.decision}) by {record.by} at {record.at}")
        plan = load_plan_artifacts(str(folder.plan_dir))
        with self.session(context) as (client, _writer):
            snap = read_snapshot(client, with_configs=False)
        missing = sorted(self.removed - set(snap.brokers))
        if missing:
            problems.append((BrokerNotAvailable, f"broker(s) {missing} to remove are not registered under "
                             f"/brokers/ids (live: {list(snap.live_broker_ids)}): check brokers_to_remove"))
        elif self.removed:
            checks.append(f"brokers to remove {sorted(self.removed)} are registered")
        destinations = {b for tp, replicas in plan.target.items() for b in replicas
                        if b not in set(plan.rollback.get(tp, ()))}
        gone = sorted(destinations - set(snap.brokers))
        if gone:
            problems.append((BrokerNotAvailable, f"broker(s) {gone} the plan moves replicas onto are not registered "
                             f"under /brokers/ids (live: {list(snap.live_broker_ids)}): start them, or re-plan"))
        elif destinations:
            checks.append(f"destination brokers {sorted(destinations)} are registered")
        for cls, text in self.extra_problems(snap, plan):
            problems.append((cls, text))
        for text in reassignment_problems(snap, dict(plan.target)):
            problems.append((ReassignmentInProgress, text))
        if not any(cls is ReassignmentInProgress for cls, _ in problems):
            checks.append("no reassignment in progress" if snap.reassignment is None
                          else "the reassignment in progress is this run's own wave (resuming)")
        for text in stale_problems(snap, dict(plan.rollback), dict(plan.target)):
            problems.append((StalePlan, text))
        if not any(cls is StalePlan for cls, _ in problems):
            checks.append(f"plan is current: {len(plan.target)} partition(s) still have the replicas it assumed")
        folder.write_json(folder.guards, {"ok": not problems, "checks": checks,
                                          "problems": [text for _, text in problems]})
        for line in checks:
            self.log.info("guard passed: %s", line)
        if problems:
            for _, text in problems:
                self.log.error("guard refused: %s", text)
            raise problems[0][0]("; ".join(text for _, text in problems))
        return {"checks": checks}
