"""PlanApprovalOperator: the standard ApprovalOperator, pinned to one plan hash, that nobody can bypass.

The human sees the plan summary, the before/after table and the hash (body from
``templates/approval_body.md.j2``, passed in by the DAG from the plan report step) and a link to
the plan report served by Airflow itself (:mod:`operators.reports.app`). The hash shown is saved
in the run folder (``approval_request.json``) when the request is made; when the answer comes
back the plan on disk must still have that hash. The decision — who, when, which hash, and the
policy that decided when no human did — is written to ``approval.json`` and appended to the
run's audit log. Reject skips every step downstream.

Who may let a plan run (the rules are pure, in :mod:`procedures.approval.policy`):

* **No trigger-time bypass.** A run triggered with the removed ``pre_approved`` Param is refused.
* **Pre-approval only by policy.** The human is skipped only when the maintenance-windows file
  (:mod:`operators.windows.config`) has a ``pre_approval`` policy for the run's cluster that
  allows this runbook, the run is a *scheduled* one inside a window, the plan is within the
  caps, and (when required) a rehearsal of the same plan hash passed. The record names the policy
  file and its sha256.
* **Four eyes.** The approval is assigned to the file's ``approvers`` for the cluster (Airflow's
  human-in-the-loop assignment) minus the person who triggered the run, and the responder is
  checked here too: the person who triggered the run cannot approve it.
* **Expiry.** The request expires after the cluster's ``approval_expires_after`` (default 12 h):
  Airflow times the wait out, and an answer that arrives later is refused here.

``dry_run`` (nothing will be written) does not wait for a human; the record says so.

Retiring brokers (:mod:`procedures.plan.retiring`): a decommission's approval (``retire``: the
brokers it removes) records them in the retiring-brokers file the moment the plan is approved (or
pre-approved), so every later plan leaves them out even if this run stops before draining them; a
rejection or an expiry releases what this run recorded. A rollback's approval
(``release_retired_by``: the run folder it undoes) releases the brokers that run recorded.

Failure: :class:`~procedures.approval.policy.BypassRefused`,
:class:`~procedures.approval.policy.FourEyesViolation`,
:class:`~procedures.approval.policy.ApprovalExpired` and :class:`PlanHashMismatch` fail the task;
nothing downstream (no ZooKeeper write) runs; the rules' refusals surface as
:class:`~operators.errors.ApprovalRefused`, which is not retried. The task has retries for Airflow's
human-in-the-loop race, and a retry resumes from the approval an earlier try recorded
(:mod:`operators.approval.retry`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

from kafka_zk.audit import AuditLog, AuditRecord, utc_now_iso
from procedures.run_folder import RunFolder
from procedures.approval.policy import (ApprovalExpired, ApprovalFacts, check_no_bypass_param, check_not_expired,
                                       check_responder, duration_text, policy_decision)
from operators.approval.retry import (RetriedApprovalOperator, answered_since, decision_event, expired_event,
                                      request_still_open)
from operators.base import as_bool
from operators.errors import PlanHashMismatch
from operators.notifications.runbook import notify_event
from procedures.rehearsal.report import passed_hashes
from operators.notifications.pages import report_link, run_page
from operators.reports.links import PlanReportLink, ProgressLink
from operators.runtime import APPROVED, DRY_RUN, PRE_APPROVED, REJECTED, ApprovalRecord, plan_hash, run_folder
from operators.windows.config import configured_windows
from procedures.windows.spec import DEFAULT_APPROVAL_EXPIRY, WindowsFile

REQUEST_FILE = "approval_request.json"


def record_decision(folder: RunFolder, record: ApprovalRecord, run_id: str, task_id: str) -> None:
    """Write ``approval.json`` and append the decision to the audit log."""
    folder.write_json(folder.approval, record.to_json())
    line = AuditRecord(path=str(folder.approval), op="approve" if record.allows_execution else "reject",
                       before=None, after=record.to_json(), actor=record.by or "policy", run_id=run_id,
                       task=task_id, dry_run=record.decision == DRY_RUN, time=utc_now_iso())
    AuditLog(folder.audit, run_id=run_id, task=task_id).append(line)


def rehearsed_hashes(run_root: str | Path, dag_id: str) -> frozenset[str]:
    """Plan hashes of ``dag_id`` under ``run_root`` whose rehearsal on an emulated copy passed
    (:func:`procedures.rehearsal.report.passed_hashes`): what ``require_rehearsal`` asks for."""

    return passed_hashes(run_root, dag_id)


def plan_size(folder: RunFolder) -> tuple[int, int | None]:
    """Replicas moved and bytes moved (``None`` when sizes are unknown) from the plan summary."""
    summary = folder.read_json(folder.plan_dir / "summary.json") or {}
    replicas = int(summary.get("replica_moves") or 0)
    if replicas == 0:
        return 0, 0
    return replicas, int(summary.get("bytes_moved") or 0) if summary.get("sized") else None




class PlanApprovalOperator(RetriedApprovalOperator):
    """Approve or reject exactly one plan hash, by someone else, in time (see module docstring)."""

    operator_extra_links = (PlanReportLink(), ProgressLink())

    template_fields: Sequence[str] = (*RetriedApprovalOperator.template_fields, "run_root", "dry_run", "zk_conn_id",
                                      "retire", "release_retired_by")

    def __init__(self, *, run_root: str, zk_conn_id: str = "", dry_run: Any = False, retire: Any = None,
                 release_retired_by: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("ignore_downstream_trigger_rules", False)
        super().__init__(**kwargs)
        self.run_root = run_root
        self.zk_conn_id = zk_conn_id
        self.dry_run = dry_run
        self.retire = retire
        self.release_retired_by = release_retired_by

    def _retiring(self, context: Any, folder: RunFolder, approved: bool) -> None:
        """Record (approved) or release (rejected, expired) this decommission's retiring brokers; on a
        rollback's approval, release those of the run it undoes (module docstring)."""
        from kafka_zk.errors import InvalidInput
        from kafka_zk.validation import check_brokers_to_remove
        from operators.hooks.zookeeper import ZooKeeperHook
        from procedures.plan.retiring import release_run, remember_approved, retiring_file

        given = bool(self.retire) and str(self.retire).strip() not in ("None", "[]")
        brokers = check_brokers_to_remove(self.retire) if given else []
        restored = str(self.release_retired_by or "").strip()
        restored = "" if restored in ("None", "null") else restored
        if not brokers and not (approved and restored):
            return
        run = f"{context['dag'].dag_id} run {context['run_id']}"
        with ZooKeeperHook(self.zk_conn_id) as hook:
            client = hook.get_conn()
            if brokers and approved:
                try:
                    added = remember_approved(client, self.run_root, brokers, run, str(folder.root.resolve()))
                except InvalidInput as exc:         # no /cluster/id: no Kafka broker ever registered here
                    self.log.warning("brokers %s NOT recorded as retiring: %s", sorted(brokers), exc)
                    return
                self.log.info("brokers %s recorded as retiring in %s (decommission approved): every later plan leaves "
                              "them out until they are released", added or sorted(brokers),
                              retiring_file(self.run_root))
            elif brokers:
                released = release_run(client, self.run_root, folder.root)
                if released:
                    self.log.info("brokers %s released from %s: this decommission was not approved", released,
                                  retiring_file(self.run_root))
            if approved and restored:
                released = release_run(client, self.run_root, restored)
                if released:
                    self.log.info("brokers %s released from %s: the decommission %s is rolled back", released,
                                  retiring_file(self.run_root), restored)

    def ask(self, context: Any) -> Any:
        dag_run = context["dag_run"]
        check_no_bypass_param(getattr(dag_run, "conf", None))
        folder = run_folder(context, self.run_root)
        digest = plan_hash(folder.plan_dir)
        task_id, run_id, dag_id = self.task_id, context["run_id"], context["dag"].dag_id
        if as_bool(self.dry_run):
            record_decision(folder, ApprovalRecord(DRY_RUN, digest, None, utc_now_iso(),
                                                   "dry run: no approval asked, nothing will be written"), run_id, task_id)
            self.log.info("dry run: approval not requested (plan %s)", digest)
            return {"decision": DRY_RUN, "plan_hash": digest}
        windows = configured_windows(in_task=True)
        replicas, size = plan_size(folder)
        now = datetime.now(timezone.utc)
        facts = ApprovalFacts(runbook=dag_id, conn_id=str(self.zk_conn_id), run_type=str(getattr(dag_run.run_type, "value", dag_run.run_type)), now=now,
                              plan_hash=digest, replicas_moved=replicas, bytes_moved=size,
                              rehearsal_hashes=rehearsed_hashes(self.run_root, dag_id))
        decision = policy_decision(windows, facts)
        if decision.skip_human:
            record_decision(folder, ApprovalRecord(PRE_APPROVED, digest, f"policy:{decision.policy}", utc_now_iso(),
                                                   decision.text), run_id, task_id)
            self.log.info("pre-approved: %s (policy %s); no human asked", decision.text, decision.policy)
            self._retiring(context, folder, approved=True)
            return {"decision": PRE_APPROVED, "plan_hash": digest}
        triggered_by = getattr(dag_run, "triggering_user_name", None)
        earlier = self._earlier_decision(folder, digest, triggered_by)
        if earlier is not None and earlier.decision == APPROVED:
            self.log.info("plan %s was approved by %s at %s, as an earlier try of this task recorded: not asking "
                          "again (operators/approval/retry.py)", digest, earlier.by, earlier.at)
            self._retiring(context, folder, approved=True)
            return {"decision": APPROVED, "plan_hash": digest, "resumed": True}
        if earlier is not None:
            self.log.info("plan %s was rejected by %s at %s, as an earlier try of this task recorded: not asking "
                          "again (operators/approval/retry.py)", digest, earlier.by, earlier.at)
            result = RetriedApprovalOperator.answered(self, context, decision_event(self.REJECT, earlier.by, earlier.at))
            return json.loads(json.dumps(result, default=str))
        request = folder.read_json(folder.root / REQUEST_FILE) or {}
        record = ApprovalRecord.load(folder)
        if (self.retrying(context) and request.get("plan_hash") == digest and request_still_open(request)
                and not answered_since(record and record.at, request.get("requested_at"))):
            self.read_recorded_answer(context, _parse_time(request.get("expires_at"))
                                      or now + timedelta(seconds=float(request["expiry_s"])))
        self.log.info("human approval needed: %s", decision.text)
        expiry = self._expiry(windows)
        self.response_timeout = expiry
        approvers = self._approvers(windows, triggered_by)
        if approvers:
            self.assigned_users = [{"id": name, "name": name} for name in approvers]
        folder.write_json(folder.root / REQUEST_FILE, {
            "plan_hash": digest, "requested_at": now.isoformat(), "expires_at": (now + expiry).isoformat(),
            "expiry_s": expiry.total_seconds(), "triggered_by": triggered_by, "assigned_to": list(approvers),
            "not_pre_approved": list(decision.reasons)})
        link = report_link(dag_id, run_id, "plan_report.html")
        self.body = self._body(digest, decision.reasons, expiry, triggered_by, link)
        return self.request(context, lambda: notify_event(
            context, folder, "approval_requested", self.log, body=self.body,
            link=link or run_page(dag_id, run_id, "plan_report.html"), what=self.subject,
            fields={"plan hash": digest, "expiry": expiry_text(now, expiry)}))

    def answered(self, context: Any, event: dict[str, Any]) -> Any:
        folder = run_folder(context, self.run_root)
        request = folder.read_json(folder.root / REQUEST_FILE) or {}
        requested = request.get("plan_hash")
        run_id = context["run_id"]
        if expired_event(event):
            record_decision(folder, ApprovalRecord(REJECTED, requested or "", None, utc_now_iso(),
                                                   f"no answer before the approval expired "
                                                   f"({request.get('expires_at')})", expired=True,
                                                   expires_at=request.get("expires_at")), run_id, self.task_id)
            self._retiring(context, folder, approved=False)
            raise ApprovalExpired(f"nobody answered before the approval expired at {request.get('expires_at')}; "
                                  "nothing was written: trigger the run again for a fresh plan")
        if "error" not in event and event.get("chosen_options"):
            user = event.get("responded_by_user") or {}
            by = (user.get("name") or user.get("id")) if isinstance(user, dict) else str(user)
            at_raw = event.get("responded_at")
            at = at_raw if isinstance(at_raw, datetime) else _parse_time(at_raw) or datetime.now(timezone.utc)
            at_text = at.isoformat()
            decision = APPROVED if event["chosen_options"][0] == self.APPROVE else REJECTED
            if decision == APPROVED:
                try:
                    check_responder(request.get("triggered_by"), by)
                    requested_at = _parse_time(request.get("requested_at"))
                    if requested_at is not None:
                        check_not_expired(requested_at, at, timedelta(seconds=float(request.get("expiry_s")
                                                                                  or DEFAULT_APPROVAL_EXPIRY.total_seconds())))
                except Exception as refused:
                    record_decision(folder, ApprovalRecord(REJECTED, requested or "", by, at_text,
                                                           f"approval refused: {refused}",
                                                           expired=isinstance(refused, ApprovalExpired),
                                                           expires_at=request.get("expires_at")),
                                    run_id, self.task_id)
                    if isinstance(refused, ApprovalExpired):
                        self._retiring(context, folder, approved=False)
                    raise
                current = plan_hash(folder.plan_dir)
                if current != requested:
                    record_decision(folder, ApprovalRecord(REJECTED, current, by, at_text,
                                                           f"approved hash {requested} but the plan now hashes to "
                                                           f"{current}"), run_id, self.task_id)
                    raise PlanHashMismatch(f"{by} approved plan {str(requested)[:12]}…, but the plan in "
                                           f"{folder.plan_dir} now hashes to {current[:12]}…: re-plan and ask for "
                                           "approval again")
            # Record first: on Reject the parent raises to skip downstream and nothing after it runs.
            record_decision(folder, ApprovalRecord(decision, requested or plan_hash(folder.plan_dir), by, at_text),
                            run_id, self.task_id)
            self.log.info("plan %s %s by %s at %s", requested, decision, by, at_text)
            self._retiring(context, folder, approved=decision == APPROVED)
        result = super().answered(context, event)
        return json.loads(json.dumps(result, default=str))

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _earlier_decision(folder: RunFolder, digest: str, triggered_by: str | None) -> ApprovalRecord | None:
        """A person's answer about ``digest`` (approved, or rejected) that an earlier try of this task
        recorded, while its request is still open (see :mod:`operators.approval.retry`), else ``None``."""
        record = ApprovalRecord.load(folder)
        request = folder.read_json(folder.root / REQUEST_FILE) or {}
        if record is None or record.decision not in (APPROVED, REJECTED) or record.plan_hash != digest:
            return None
        if record.expired or not record.by or record.note:     # a refusal or an expiry is no person's answer
            return None
        if request.get("plan_hash") != digest or not request_still_open(request):
            return None
        if record.decision == APPROVED:
            check_responder(triggered_by, record.by)
        return record

    def _expiry(self, windows: WindowsFile | None) -> timedelta:
        cluster = windows.cluster(str(self.zk_conn_id)) if windows else None
        return cluster.approval_expires_after if cluster else DEFAULT_APPROVAL_EXPIRY

    def _approvers(self, windows: WindowsFile | None, triggered_by: str | None) -> tuple[str, ...]:
        cluster = windows.cluster(str(self.zk_conn_id)) if windows else None
        if cluster is None or not cluster.approvers:
            return ()
        who = (triggered_by or "").strip().lower()
        return tuple(a for a in cluster.approvers if a.lower() != who)

    def _body(self, digest: str, reasons: Sequence[str], expiry: timedelta, triggered_by: str | None,
              link: str | None) -> str:
        lines = [self.body or ""]
        if digest not in lines[0]:
            lines.append(f"plan hash: `{digest}`")
        if link:
            lines.append(f"**[Open the plan report]({link})** (served by Airflow; your login applies)")
        lines.append(f"This request {expiry_text(datetime.now(timezone.utc), expiry)}. "
                     + four_eyes_text(triggered_by, [u["name"] for u in self.assigned_users or []]))
        lines.append("Not pre-approved: " + "; ".join(reasons) + ".")
        return "\n\n".join(lines)


def four_eyes_text(triggered_by: str | None, approvers: Sequence[str]) -> str:
    """The four-eyes rule as the approval body states it: who cannot answer Approve, who may, and what
    happens to the triggerer's own Approve (Airflow's UI shows a refused answer only as "Access Denied")."""
    if not triggered_by:
        return "The person who triggered the run cannot approve it (four eyes)."
    if approvers:
        return (f"Four eyes: {triggered_by} triggered this run and cannot approve it; it is assigned to "
                f"{', '.join(approvers)}. An Approve from {triggered_by} is refused (the UI may show it as "
                "\"Access Denied\") and the request keeps waiting for them.")
    return (f"Four eyes: {triggered_by} triggered this run and cannot approve it; anyone else who may run this "
            f"runbook can answer. An Approve from {triggered_by} is refused: the run fails and nothing is written.")


def expiry_text(now: datetime, expiry: timedelta) -> str:
    """``expires at 21:15 UTC, in 12 h`` (the date is added when it is not today's, in UTC)."""
    at = (now + expiry).astimezone(timezone.utc)
    day = "" if at.date() == now.astimezone(timezone.utc).date() else f" on {at:%a %d %b}"
    return f"expires at {at:%H:%M} UTC{day}, in {duration_text(expiry)}"


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not value:
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
