"""PlanApprovalOperator: the standard ApprovalOperator, pinned to one plan hash.

The human sees the plan summary and its hash (body from ``templates/approval_body.md.j2``, passed
in by the DAG from the plan report step). The hash shown is saved in the run folder when the
request is made; when the answer comes back the plan on disk must still have that hash, so a plan
edited while waiting is refused. The decision — who, when, which hash — is written to
``approval.json`` and appended to the run's audit log (``op: "approve"``/``"reject"``). Reject
skips every step downstream (the teardown has nothing to undo: its setup never ran).

``pre_approved`` (a maintenance-window policy) and ``dry_run`` (nothing will be written) do not
wait for a human; the record says so (``decision: pre_approved`` / ``dry_run``) so the skip is on
file. On Airflow 3.3 the task waits in ``awaiting_input`` until the Required Actions page or
the HITL REST API records a response (:mod:`operators.local_run` shows the call).

Failure: :class:`PlanHashMismatch` when the plan changed between request and response.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from airflow.providers.standard.operators.hitl import ApprovalOperator

from kafka_zk.audit import AuditLog, AuditRecord, utc_now_iso
from kafka_zk.run_folder import RunFolder
from operators.base import as_bool
from operators.errors import PlanHashMismatch
from operators.runtime import APPROVED, DRY_RUN, PRE_APPROVED, REJECTED, ApprovalRecord, plan_hash, run_folder

REQUEST_FILE = "approval_request.json"


def record_decision(folder: RunFolder, record: ApprovalRecord, run_id: str, task_id: str) -> None:
    """Write ``approval.json`` and append the decision to the audit log."""
    folder.write_json(folder.approval, record.to_json())
    line = AuditRecord(path=str(folder.approval), op="approve" if record.allows_execution else "reject",
                       before=None, after=record.to_json(), actor=record.by or "policy", run_id=run_id,
                       task=task_id, dry_run=record.decision == DRY_RUN, time=utc_now_iso())
    AuditLog(folder.audit, run_id=run_id, task=task_id).append(line)


class PlanApprovalOperator(ApprovalOperator):
    """Approve or reject exactly one plan hash (see module docstring)."""

    template_fields: Sequence[str] = (*ApprovalOperator.template_fields, "run_root", "pre_approved", "dry_run")

    def __init__(self, *, run_root: str, pre_approved: Any = False, dry_run: Any = False, **kwargs: Any) -> None:
        kwargs.setdefault("ignore_downstream_trigger_rules", False)
        super().__init__(**kwargs)
        self.run_root = run_root
        self.pre_approved = pre_approved
        self.dry_run = dry_run

    def execute(self, context: Any) -> Any:
        folder = run_folder(context, self.run_root)
        digest = plan_hash(folder.plan_dir)
        task_id, run_id = self.task_id, context["run_id"]
        if as_bool(self.dry_run):
            record_decision(folder, ApprovalRecord(DRY_RUN, digest, None, utc_now_iso(),
                                                   "dry run: no approval asked, nothing will be written"), run_id, task_id)
            self.log.info("dry run: approval not requested (plan %s)", digest)
            return {"decision": DRY_RUN, "plan_hash": digest}
        if as_bool(self.pre_approved):
            by = f"policy:pre_approved (triggered by {getattr(context['dag_run'], 'triggering_user_name', None) or 'unknown'})"
            record_decision(folder, ApprovalRecord(PRE_APPROVED, digest, by, utc_now_iso(),
                                                   "pre-approved by maintenance-window policy; human approval skipped"),
                            run_id, task_id)
            self.log.info("pre-approved by policy: plan %s, no human asked (recorded in %s)", digest, folder.approval)
            return {"decision": PRE_APPROVED, "plan_hash": digest}
        folder.write_json(folder.root / REQUEST_FILE, {"plan_hash": digest, "requested_at": utc_now_iso()})
        if digest not in (self.body or ""):
            self.body = f"{self.body or ''}\n\nplan hash: `{digest}`"
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        # Record first: on Reject the parent raises to skip downstream and nothing after it runs.
        if "error" not in event and event.get("chosen_options"):
            folder = run_folder(context, self.run_root)
            requested = (folder.read_json(folder.root / REQUEST_FILE) or {}).get("plan_hash")
            user = event.get("responded_by_user") or {}
            by = (user.get("name") or user.get("id")) if isinstance(user, dict) else str(user)
            at = event.get("responded_at")
            at = at.isoformat() if hasattr(at, "isoformat") else str(at)
            decision = APPROVED if event["chosen_options"][0] == self.APPROVE else REJECTED
            current = plan_hash(folder.plan_dir)
            if decision == APPROVED and current != requested:
                record_decision(folder, ApprovalRecord(REJECTED, current, by, at,
                                                       f"approved hash {requested} but the plan now hashes to {current}"),
                                context["run_id"], self.task_id)
                raise PlanHashMismatch(f"{by} approved plan {str(requested)[:12]}…, but the plan in {folder.plan_dir} "
                                       f"now hashes to {current[:12]}…: re-plan and ask for approval again")
            record_decision(folder, ApprovalRecord(decision, requested or current, by, at), context["run_id"],
                            self.task_id)
            self.log.info("plan %s %s by %s at %s", requested, decision, by, at)
        result = super().execute_complete(context=context, event=event)
        return json.loads(json.dumps(result, default=str))
