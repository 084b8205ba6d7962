"""The steps of the stuck_reassignment runbook: diagnose, then each way out behind its own approval.

* **DiagnoseStuckOperator** reads the live cluster and writes ``diagnosis.json`` / ``diagnosis.md``:
  every unfinished move with its cause (:mod:`kafka_zk.admin.stuck`), and which fixes apply —
  ``rewrite`` when a target broker is gone: per partition the way out that copies least
  (:mod:`kafka_zk.admin.stuck_fixes`): back to its original replicas when they are all
  registered and in the ISR (nothing to copy), else a registered broker in place of the dead one
  (chosen by the planners' one placer: the plan job's ``replace-dead-targets`` operation, launched
  as a child process like every plan step, :mod:`operators.runbooks.stuck_targets`) — each with both options' bytes (from the connection's ``log_dirs_source`` when it has one);
  ``election`` when the controller is not acting on the node (or no controller); ``throttles`` when
  throttles no runbook run of ours owns are set (e.g. left by Kafka's own tool, whose ``--verify``
  removes them only after a move that finished, never after a revert): the exact keys and values.
  A revert restores the original replicas in their original order; where that order comes from is
  in each fix (:func:`kafka_zk.admin.stuck_fixes.original_order`).
* **FixApprovalOperator** asks a human for one fix (the body says exactly which writes it makes),
  or skips when the diagnosis does not call for it (:mod:`operators.approval.change`: four eyes,
  expiry, pinned to the diagnosis' hash; the decision in ``approval_<fix>.json`` and the audit log).
* **RewriteReassignmentOperator** (a target broker is gone for good): the documented ZooKeeper-only
  procedure (docs/zookeeper.md §2.7.4) — delete the stuck ``/admin/reassign_partitions``, create
  one whose target for each such partition is the approved new target (other pending entries kept
  as they are), then delete ``/controller`` so that the next controller reads it (a 2.4
  controller starts a new target from the partition's original replicas). Never a hand edit of the
  live node. Refused when the cluster no longer matches the approved diagnosis.
* **ForceElectionOperator** (the controller is not acting): delete ``/controller`` and wait, bounded,
  for a new one, which re-reads the pending node (§2.7.1).
* **WaitUnstuckOperator** waits, bounded, until nothing is pending; the ``throttles`` fix
  (:mod:`operators.runbooks.stuck_throttles`) then removes exactly the approved foreign throttles;
  **StuckReportOperator** writes ``final_report.md`` and fails the run when something is still stuck
  or the rewrite or election fix was rejected (a rejected ``throttles`` fix leaves them, said).

Every write goes through the audited write gate. Failure: :class:`StillStuck`, :class:`StalePlan`,
:class:`ControllerNotMoved`, the approval errors; :class:`InvalidInput` when the plan job fails or a
partition can be neither reverted nor given a registered broker (the placer's refusal);
:class:`procedures.child_process.ChildTimedOut` when the job runs past :data:`PLAN_JOB_TIMEOUT_S`.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk.admin.controller import ControllerNotMoved, reelect_controller
from kafka_zk.admin.reassignment import replace_reassignment
from kafka_zk.admin.stuck import NEEDS_ELECTION, diagnose
from kafka_zk.admin.stuck_fixes import (REVERT, ReplicaSizes, Rewrite, bytes_text, choose_fixes,
                                        dead_target_partitions)
from kafka_zk.audit import utc_now_iso
from kafka_zk.authority import WriteAuthority
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import KafkaZkError, StalePlan
from kafka_zk.health.owners import ThrottleOwners, find_throttle_owners, foreign_throttles
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.approval.change import ChangeApprovalOperator, require_change_approval
from operators.base import RunbookOperator
from operators.hooks.zookeeper import ZooKeeperHook
from procedures.plan.log_dirs_source import read_log_dirs
from procedures.plan.retiring import note_retiring
from operators.reports.outcome import Facts, OutcomeReportOperator
from operators.runbooks.stuck_targets import plan_replacement_targets
from operators.runtime import change_approval, run_folder

DIAGNOSIS = "diagnosis.json"


class StillStuck(KafkaZkError):
    """Partitions still not moving after the approved fixes (or with a fix rejected)."""


def _tp(text: str) -> TopicPartition:
    topic, _, partition = text.rpartition("-")
    return TopicPartition(topic, int(partition))


def read_diagnosis(folder) -> dict:
    doc = folder.read_json(folder.root / DIAGNOSIS)
    if doc is None:
        raise StillStuck(f"{folder.root / DIAGNOSIS} is missing: the diagnose step must run first")
    return doc


def needs_rewrite(snap) -> set[TopicPartition]:
    """The partitions a rewrite must retarget on the cluster as it is (see :func:`diagnosis_doc`)."""
    return {s.tp for s in dead_target_partitions(snap, diagnose(snap))}


def diagnosis_doc(snap, sizes: ReplicaSizes | None = None, owners=None,
                  replacement_targets: Rewrite | None = None) -> dict:
    """What is stuck and why, the fix per partition (``rewrite``: the targets the rewrite writes,
    ``fixes``: both options and their bytes), and the foreign throttles (with ``owners``).
    ``replacement_targets``: the planners' rewrite targets (:func:`plan_replacement_targets`), needed
    only when a target broker is gone."""

    stuck = diagnose(snap)
    owners = owners or ThrottleOwners()
    fixes = []
    if dead_target_partitions(snap, stuck):
        if replacement_targets is None:
            raise TypeError("diagnosis_doc: a target broker is gone, pass the planners' replacement_targets")
        fixes = choose_fixes(snap, stuck, sizes, replacement_targets=replacement_targets, owned_topics=owners.topics)
    rewrite = {f.tp: f.target for f in fixes}
    throttles = [{"entity": t.entity, "keys": t.keys} for t in foreign_throttles(snap, owners)]
    needs_election = bool(stuck) and not rewrite and (
        snap.controller_id is None or any(s.cause.kind in NEEDS_ELECTION for s in stuck))
    return {"controller": snap.controller_id,
            "partitions": [{"partition": str(s.tp), "target": list(s.target), "replicas": list(s.replicas),
                            "cause": s.cause.kind, "why": s.cause.text, "in_node": s.in_node} for s in stuck],
            "rewrite": {str(tp): list(t) for tp, t in sorted(rewrite.items())},
            "fixes": [{"partition": str(f.tp), "chosen": f.chosen, "target": list(f.target),
                       "revert": list(f.revert_to) if f.revert_to is not None else None,
                       "rewrite": list(f.rewrite_to) if f.rewrite_to is not None else None,
                       "revert_bytes": f.revert_bytes, "rewrite_bytes": f.rewrite_bytes, "why": f.why,
                       "order_source": f.order_source, "order_exact": f.order_exact}
                      for f in sorted(fixes, key=lambda f: f.tp)],
            "sizes_known": sizes is not None,
            "foreign_throttles": throttles,
            "throttles": bool(throttles),
            "election": needs_election}


#: what the ``throttles`` fix removed and left (``operators/runbooks/stuck_throttles.py``); not
#: ``throttles.json``, which marks a run's own throttles (kafka_zk.health.owners)
THROTTLES_REMOVED = "foreign_throttles_removed.json"


def throttles_done_lines(folder, doc: dict) -> list[str]:
    """For the final report: the foreign throttles removed, left, or kept (Markdown lines)."""
    if not doc.get("foreign_throttles"):
        return []
    done = folder.read_json(folder.root / THROTTLES_REMOVED)
    if done is None:
        return ["- foreign throttles: not removed (the `throttles` fix was not approved or did not run): remove "
                "them with `kafka-configs --alter --delete-config` once nothing moves"]
    lines = [f"- foreign throttles removed: {e['entity']}: {', '.join(e['removed'])}" for e in done["entities"]
             if e["removed"]]
    lines += [f"- foreign throttle left on {e['entity']}: {why}" for e in done["entities"] for why in e["left"]]
    return lines or ["- foreign throttles: nothing left to remove"]


def _option(target: list | None, n: int | None) -> str:
    return "not possible" if target is None else f"{target} copies {bytes_text(n)}"


def fix_lines(doc: dict) -> list[str]:
    """The per-partition fix, both options with their bytes (Markdown lines)."""
    lines = []
    for f in doc.get("fixes", []):
        lines.append(f"- **{f['partition']}**: **{f['chosen']}** → {f['target']} — revert: "
                     f"{_option(f['revert'], f['revert_bytes'])}; rewrite: {_option(f['rewrite'], f['rewrite_bytes'])} "
                     f"({f['why']})")
    if doc.get("fixes") and not doc.get("sizes_known"):
        lines.append("- (bytes unknown: the connection has no `log_dirs_source`; a revert to replicas all in "
                     "the ISR copies nothing, a rewrite copies a full replica per new broker)")
    return lines


def throttle_lines(doc: dict) -> list[str]:
    """The throttles no runbook run of ours owns (Markdown lines; none: one line saying so)."""
    foreign = doc.get("foreign_throttles") or []
    if not foreign:
        return ["No throttle on the cluster is foreign to our runbook runs."]
    return ["Throttles no runbook run of ours set (left by Kafka's own `kafka-reassign-partitions --throttle`, "
            "whose `--verify` removes them only once the move it started finished — never after a revert — or "
            "set by hand). Proposed fix (needs its own approval, `approve_throttles`): once nothing moves, remove "
            "exactly these keys (a key whose value changed since is left as it is):"] + \
        [f"- {t['entity']}: " + ", ".join(f"{k}={v}" for k, v in t["keys"].items()) for t in foreign]


class DiagnoseStuckOperator(RunbookOperator):
    """Diagnose every unfinished move (see module docstring)."""

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        source = ZooKeeperHook(self.zk_conn_id).log_dirs_source()
        with self.session(context) as (client, _writer):
            snap = read_snapshot(client, with_configs=True)
            reading = read_log_dirs(source, client)
            note_retiring(folder, client, self.run_root)      # the placer leaves them out (stuck_targets.py)
        if reading.sizes is None:
            self.log.info("replica sizes unknown (%s): the fixes' bytes are not shown", reading.note)
        placed = plan_replacement_targets(folder, snap, self.log, lambda job: setattr(self, "_job", job)) \
            if dead_target_partitions(snap, diagnose(snap)) else None
        doc = diagnosis_doc(snap, reading.sizes, find_throttle_owners(self.run_root), placed)
        folder.write_json(folder.root / DIAGNOSIS, doc)
        lines = [f"# Stuck reassignment: diagnosis ({len(doc['partitions'])} partition(s) not moving)", "",
                 f"Controller: {doc['controller'] if doc['controller'] is not None else 'none (/controller absent)'}",
                 ""]
        lines += [f"- **{p['partition']}**: {p['why']} (replicas now {p['replicas']}, target {p['target']}"
                  f"{'' if p['in_node'] else ', API-driven'})" for p in doc["partitions"]]
        if doc["rewrite"]:
            reverts = sum(f["chosen"] == REVERT for f in doc["fixes"])
            lines += ["", "Proposed fix (needs its own approval): rewrite the reassignment, per partition the way "
                      f"out that copies least ({reverts} back to the original replicas, "
                      f"{len(doc['fixes']) - reverts} onto a registered broker in place of the dead one): "
                      + "; ".join(f"{tp} → {t}" for tp, t in doc["rewrite"].items()) +
                      ", then delete /controller so that the next controller reads it.", "", *fix_lines(doc)]
        if doc["election"]:
            lines += ["", "Proposed fix (needs its own approval): delete /controller so that a new controller "
                      "re-reads /admin/reassign_partitions."]
        if not doc["partitions"]:
            lines += ["Nothing is stuck: no unfinished reassignment."]
        lines += ["", *throttle_lines(doc)]
        folder.write_text(folder.root / "diagnosis.md", "\n".join(lines) + "\n")
        for p in doc["partitions"]:
            self.log.warning("stuck: %s — %s", p["partition"], p["why"])
        return {"stuck": len(doc["partitions"]), "rewrite": bool(doc["rewrite"]), "election": doc["election"],
                "throttles": doc["throttles"], "text": "\n".join(lines)}

    def on_kill(self) -> None:
        job = getattr(self, "_job", None)
        if job is not None:
            job.terminate()


class FixApprovalOperator(ChangeApprovalOperator):
    """One fix of the diagnosis, approved (or skipped when the diagnosis does not call for it)."""

    def __init__(self, *, fix: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", f"Stuck reassignment: approve the {fix} fix")
        super().__init__(name=fix, document=DIAGNOSIS, **kwargs)
        self.fix = fix

    def wanted(self, doc: dict) -> bool:
        return bool(doc.get(self.fix))

    def ask(self, context: Any) -> Any:
        if self.fix == "throttles":
            folder = run_folder(context, self.run_root)
            rejected = [f for f in ("rewrite", "election")
                        if (folder.read_json(folder.root / f"approval_{f}.json") or {}).get("decision") == "rejected"]
            if rejected:
                raise AirflowSkipException(f"the {', '.join(rejected)} fix was rejected: the move is still stuck and "
                                           "may need its throttles; they are kept")
        return super().ask(context)

    def writes_text(self, doc: dict, folder) -> str:
        if self.fix == "rewrite":
            what = ("delete /admin/reassign_partitions, create it again with "
                    + "; ".join(f"{tp} → {t}" for tp, t in doc["rewrite"].items())
                    + " (other pending entries unchanged), then delete /controller")
        elif self.fix == "throttles":
            what = ("once nothing moves, delete from the config of "
                    + "; ".join(f"{t['entity']}: " + ", ".join(f"{k}={v}" for k, v in t["keys"].items())
                                for t in doc["foreign_throttles"])
                    + " (one config write and change notification per entity; a key whose value changed since "
                      "the diagnosis is left as it is)")
        else:
            what = "delete /controller (a new controller re-reads the pending node)"
        diagnosis = (folder.root / "diagnosis.md").read_text(encoding="utf-8")
        return f"{diagnosis}\n\n**This approval allows exactly these writes:** {what}. Every write is audited."


def _approved(folder, fix: str) -> None:
    require_change_approval(folder, fix, DIAGNOSIS)


class _ControllerStep(RunbookOperator):
    """A fix that ends by deleting /controller and waiting (``controller_wait_s``) for a new one; its
    writes need the approval of that fix (``fix``) of the diagnosis now on disk."""

    fix: str = ""

    def write_authority(self, folder) -> WriteAuthority:
        return change_approval(folder, self.fix, DIAGNOSIS)

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "controller_wait_s")

    def __init__(self, *, controller_wait_s: Any = 120, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.controller_wait_s = controller_wait_s


class RewriteReassignmentOperator(_ControllerStep):
    """Rewrite the stuck reassignment without the dead brokers, then re-elect the controller."""

    fix = "rewrite"

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if not read_diagnosis(folder)["rewrite"]:
            raise AirflowSkipException("the diagnosis calls for no rewrite")
        if not self.is_dry_run:
            _approved(folder, "rewrite")
        approved = {_tp(k): tuple(v) for k, v in read_diagnosis(folder)["rewrite"].items()}
        with self.session(context) as (client, writer):
            snap = read_snapshot(client, with_configs=False)
            now = needs_rewrite(snap)
            if set(now) != set(approved):
                raise StalePlan(f"the cluster changed since the diagnosis: partitions needing a rewrite are now "
                                f"{sorted(map(str, now))}, approved {sorted(map(str, approved))}; run again")
            pending = dict(snap.reassignment.targets()) if snap.reassignment is not None else {}
            replace_reassignment(writer, snap, {**{tp: tuple(t) for tp, t in pending.items()}, **approved})
            _, new = reelect_controller(client, writer, float(self.controller_wait_s))
            if not self.is_dry_run:
                if new is None:
                    raise ControllerNotMoved(f"no controller was elected within {self.controller_wait_s}s of "
                                             "deleting /controller; check the brokers")
                self.log.info("reassignment rewritten (%d partition(s) retargeted); controller now broker %s",
                              len(approved), new)
        folder.write_json(folder.root / "rewrite.json", {str(tp): list(t) for tp, t in approved.items()})
        return {"rewritten": len(approved)}


class ForceElectionOperator(_ControllerStep):
    """Delete /controller so that a new controller re-reads the pending node."""

    fix = "election"

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if not read_diagnosis(folder)["election"]:
            raise AirflowSkipException("the diagnosis calls for no controller election")
        if not self.is_dry_run:
            _approved(folder, "election")
        with self.session(context) as (client, writer):
            before, new = reelect_controller(client, writer, float(self.controller_wait_s))
        if self.is_dry_run:
            return {"controller": before}
        if new is None:
            raise ControllerNotMoved(f"no controller was elected within {self.controller_wait_s}s; check the brokers")
        self.log.info("controller re-elected: broker %s → broker %s", before, new)
        return {"before": before, "after": new}


class WaitUnstuckOperator(RunbookOperator):
    """Bounded wait until no move is pending."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "timeout_s", "poll_interval_s")

    def __init__(self, *, timeout_s: Any = 600, poll_interval_s: Any = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        rejected = [fix for fix in ("rewrite", "election")
                    if (folder.read_json(folder.root / f"approval_{fix}.json") or {}).get("decision") == "rejected"]
        if rejected:
            raise AirflowSkipException(f"the {', '.join(rejected)} fix was rejected: nothing to wait for")
        if self.is_dry_run:
            raise AirflowSkipException("dry run: no fix was written, nothing to wait for")
        deadline = time.monotonic() + float(self.timeout_s)
        with self.session(context) as (client, _writer):
            while True:
                snap = read_snapshot(client, with_configs=True)
                left = diagnose(snap)
                if not left and snap.reassignment is None:
                    folder.write_json(folder.root / "unstuck.json", {"at": utc_now_iso(), "pending": []})
                    return {"pending": 0}
                if time.monotonic() >= deadline:
                    folder.write_json(folder.root / "unstuck.json", {"at": utc_now_iso(), "pending": [
                        {"partition": str(s.tp), "why": s.cause.text} for s in left]})
                    raise StillStuck(f"{len(left)} partition(s) still not moving after {self.timeout_s}s: "
                                     + "; ".join(f"{s.tp}: {s.cause.text}" for s in left[:10]))
                time.sleep(float(self.poll_interval_s))


class StuckReportOperator(OutcomeReportOperator):
    """The stuck reassignment's part of the outcome contract: what was stuck, why, what was approved
    and done, what is left (a partition still stuck is the cause of a failed run)."""

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        doc = folder.read_json(folder.root / DIAGNOSIS) or {"partitions": []}
        approvals = {fix: folder.read_json(folder.root / f"approval_{fix}.json")
                     for fix in ("rewrite", "election", "throttles")}
        unstuck = folder.read_json(folder.root / "unstuck.json") or {}
        left = unstuck.get("pending")
        diagnosis = (folder.root / "diagnosis.md").read_text(encoding="utf-8") \
            if (folder.root / "diagnosis.md").exists() else ""
        lines = [diagnosis.replace("# ", "## ", 1) or "## Stuck reassignment", "", "## What was done"]
        for fix, rec in approvals.items():
            if rec:
                lines.append(f"- {fix}: {rec['decision']} by {rec['by']} at {rec['at']}"
                             + (f" ({rec['note']})" if rec.get("note") else ""))
        if self.is_dry_run:
            lines.append("- dry run: no approval asked, nothing written; the writes each fix would make are in "
                         "audit.jsonl (dry_run: true)")
        else:
            lines.append(f"- outcome: {'unstuck: nothing pending' if left == [] else 'still stuck' if left else 'not checked'}")
            lines += throttles_done_lines(folder, doc)
        stuck = len(doc["partitions"])
        unfinished = ""
        if stuck and not self.is_dry_run and left:
            unfinished = f"{len(left)} partition(s) still stuck: " + "; ".join(
                f"{p['partition']}: {p['why']}" for p in left[:3])
        elif stuck and not self.is_dry_run and left is None:
            unfinished = f"{stuck} partition(s) were stuck and whether they move now was not checked"
        return Facts(what="Stuck reassignment", approvals=("approval_rewrite.json", "approval_election.json"),
                     plan_md=diagnosis,
                     details_md="\n".join(lines), unfinished=unfinished,
                     summary="nothing stuck" if not stuck else f"{stuck} partition(s) were stuck"
                     + ("" if self.is_dry_run else "; unstuck: nothing pending" if left == [] else ""))


__all__ = ["DiagnoseStuckOperator", "FixApprovalOperator", "RewriteReassignmentOperator", "ForceElectionOperator",
           "WaitUnstuckOperator", "StuckReportOperator", "StillStuck"]
