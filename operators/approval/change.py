"""ChangeApprovalOperator: approve one change document (not a reassignment plan) — by another person,
in time, exactly that document.

For runbooks whose change is not a reassignment plan (the stuck-reassignment fixes, a topic spec's
diff): the step reads a JSON document the run wrote (``document``, in the run folder), skips when
:meth:`wanted` says there is nothing to approve, otherwise asks a human with a body that says
exactly which writes the approval allows (:meth:`writes_text`). The document's sha256 is recorded
with the request; the answer must come from someone other than the person who triggered the run
and before the expiry (the windows file's ``approval_expires_after`` for the cluster, default
12 h), and the document must still hash the same. A request nobody answered in time is recorded as expired
(``expired``, ``expires_at``: the outcome contract's EXPIRED, not a refusal). The decision goes to ``approval_<name>.json``
and the audit log; :func:`require_change_approval` is what the writing step checks. Asking a human
notifies ``approval_requested`` to the run's ``notify_conn_ids`` (as the plan approval does).

Failure: :class:`~procedures.approval.policy.FourEyesViolation`,
:class:`~procedures.approval.policy.ApprovalExpired`, :class:`PlanHashMismatch` (document changed),
:class:`~operators.errors.ApprovalMissing` (the writing step found no approval of this document).
The rules' refusals surface as :class:`~operators.errors.ApprovalRefused` (not retried); the task
has retries for Airflow's human-in-the-loop race, and a retry resumes from the approval an earlier
try recorded (:mod:`operators.approval.retry`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk.audit import AuditLog, AuditRecord, utc_now_iso
from kafka_zk.errors import KafkaZkError
from procedures.run_folder import RunFolder
from procedures.approval.policy import (ApprovalExpired, check_no_bypass_param, check_not_expired,
                                        check_responder)
from operators.approval.retry import (RetriedApprovalOperator, answered_since, decision_event, expired_event,
                                      request_still_open)
from operators.approval.step import duration_text, expiry_text, four_eyes_text
from operators.base import as_bool
from operators.errors import ApprovalMissing, PlanHashMismatch
from operators.notifications.runbook import notify_event
from operators.reports.links import ProgressLink, RunReportsLink
from operators.runtime import document_hash, run_folder
from operators.windows.config import configured_windows
from procedures.windows.spec import DEFAULT_APPROVAL_EXPIRY


def require_change_approval(folder: RunFolder, name: str, document: str) -> dict:
    """The approval of exactly the document now on disk, or :class:`ApprovalMissing`."""
    record = folder.read_json(folder.root / f"approval_{name}.json")
    if not record or record.get("decision") != "approved":
        state = "no approval" if not record else f"decision {record.get('decision')!r}"
        raise ApprovalMissing(f"{folder.root / f'approval_{name}.json'}: {state}; nothing written")
    if record.get("document_sha256") != document_hash(folder, document):
        raise PlanHashMismatch(f"{document} changed after {record.get('by')} approved it; run again")
    return record


def expires_at_of(request: dict) -> str:
    """When the request expires(d), ISO 8601 (``requested_at`` + ``expiry_s``), or "unknown"."""
    try:
        requested = datetime.fromisoformat(str(request["requested_at"]))
        return (requested + timedelta(seconds=float(request["expiry_s"]))).isoformat()
    except (KeyError, TypeError, ValueError):
        return "unknown"


class ChangeApprovalOperator(RetriedApprovalOperator):
    """Approve one change document (see module docstring); subclasses say what it allows."""

    operator_extra_links = (ProgressLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RetriedApprovalOperator.template_fields, "run_root", "zk_conn_id", "dry_run")

    def __init__(self, *, name: str, document: str, run_root: str, zk_conn_id: str, dry_run: Any = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("ignore_downstream_trigger_rules", False)
        kwargs.setdefault("subject", f"Approve: {name}")
        kwargs.setdefault("body", "")
        super().__init__(**kwargs)
        self.name = name
        self.document = document
        self.run_root = run_root
        self.zk_conn_id = zk_conn_id
        self.dry_run = dry_run

    # -- what a subclass says -----------------------------------------------------------------

    def wanted(self, doc: dict) -> bool:
        """Whether the document calls for this approval (else the step is skipped)."""
        return True

    def writes_text(self, doc: dict, folder: RunFolder) -> str:
        """The body: what the approver sees and exactly which writes the approval allows."""
        return json.dumps(doc, indent=2)

    # -- the step ------------------------------------------------------------------------------

    def ask(self, context: Any) -> Any:
        check_no_bypass_param(getattr(context["dag_run"], "conf", None))
        folder = run_folder(context, self.run_root)
        digest = document_hash(folder, self.document)
        doc = json.loads((folder.root / self.document).read_text(encoding="utf-8"))
        if not self.wanted(doc):
            raise AirflowSkipException(f"{self.document} calls for no {self.name}: nothing to approve")
        if as_bool(self.dry_run):
            raise AirflowSkipException("dry run: nothing will be written, no approval asked")
        windows = configured_windows(in_task=True)
        cluster = windows.cluster(str(self.zk_conn_id)) if windows else None
        expiry = cluster.approval_expires_after if cluster else DEFAULT_APPROVAL_EXPIRY
        self.response_timeout = expiry
        triggered_by = getattr(context["dag_run"], "triggering_user_name", None)
        earlier = self._earlier_decision(folder, digest, triggered_by)
        if earlier is not None:
            self.log.info("%s was %s by %s at %s, as an earlier try of this task recorded: not asking again "
                          "(operators/approval/retry.py)", self.document, earlier.get("decision"), earlier.get("by"),
                          earlier.get("at"))
            if earlier.get("decision") == "approved":
                return {"decision": "approved", "document_sha256": digest, "resumed": True}
            result = RetriedApprovalOperator.answered(self, context, decision_event(self.REJECT, earlier.get("by"),
                                                                                    earlier.get("at")))
            return json.loads(json.dumps(result, default=str))
        request = folder.read_json(folder.root / f"approval_{self.name}_request.json") or {}
        record = folder.read_json(folder.root / f"approval_{self.name}.json") or {}
        if (self.retrying(context) and request.get("document_sha256") == digest and request_still_open(request)
                and not answered_since(record.get("at"), request.get("requested_at"))):
            requested = datetime.fromisoformat(str(request["requested_at"]))
            self.read_recorded_answer(context, requested + timedelta(seconds=float(request["expiry_s"])))
        approvers = [a for a in (cluster.approvers if cluster is not None else ())
                     if a.lower() != (triggered_by or "").lower()]
        if approvers:                       # none left: anyone but the trigger (checked at the answer)
            self.assigned_users = [{"id": a, "name": a} for a in approvers]
        folder.write_json(folder.root / f"approval_{self.name}_request.json", {
            "requested_at": datetime.now(timezone.utc).isoformat(), "expiry_s": expiry.total_seconds(),
            "triggered_by": triggered_by, "document": self.document, "document_sha256": digest})
        self.body = (f"{self.writes_text(doc, folder)}\n\n`{self.document}` sha256 `{digest}`. This request "
                     f"{expiry_text(datetime.now(timezone.utc), expiry)}.\n\n{four_eyes_text(triggered_by, approvers)}")
        return self.request(context, lambda: notify_event(
            context, folder, "approval_requested", self.log, body=self.body, what=self.subject,
            fields={"document": self.document, "sha256": digest, "expires after": duration_text(expiry)}))

    def answered(self, context: Any, event: dict[str, Any]) -> Any:
        folder = run_folder(context, self.run_root)
        request = folder.read_json(folder.root / f"approval_{self.name}_request.json") or {}
        if expired_event(event):
            expires_at = expires_at_of(request)
            self._record(context, folder, "rejected", None, datetime.now(timezone.utc),
                         f"no answer before the approval expired ({expires_at})", request, expired=True)
            raise ApprovalExpired(f"nobody answered before the approval of {self.document} expired at {expires_at}; "
                                  "nothing was written: trigger the run again for a fresh request")
        if "error" not in event and event.get("chosen_options"):
            user = event.get("responded_by_user") or {}
            by = (user.get("name") or user.get("id")) if isinstance(user, dict) else str(user)
            at = event.get("responded_at")
            at = at if isinstance(at, datetime) else datetime.now(timezone.utc)
            decision = "approved" if event["chosen_options"][0] == self.APPROVE else "rejected"
            if decision == "approved":
                try:
                    check_responder(request.get("triggered_by"), by)
                    check_not_expired(datetime.fromisoformat(request["requested_at"]), at,
                                      timedelta(seconds=float(request.get("expiry_s") or 43200)))
                    if document_hash(folder, self.document) != request.get("document_sha256"):
                        raise PlanHashMismatch(f"{self.document} changed while the approval waited; run again")
                except KafkaZkError as refused:
                    self._record(context, folder, "rejected", by, at, f"approval refused: {refused}", request,
                                 expired=isinstance(refused, ApprovalExpired))
                    raise
            self._record(context, folder, decision, by, at, "", request)
        result = super().answered(context, event)
        return json.loads(json.dumps(result, default=str))

    def _earlier_decision(self, folder: RunFolder, digest: str, triggered_by: str | None) -> dict | None:
        """A person's answer about this document (approved, or rejected) that an earlier try of this
        task recorded, while its request is still open (see :mod:`operators.approval.retry`), else ``None``."""
        record = folder.read_json(folder.root / f"approval_{self.name}.json") or {}
        request = folder.read_json(folder.root / f"approval_{self.name}_request.json") or {}
        if record.get("decision") not in ("approved", "rejected") or record.get("document_sha256") != digest:
            return None
        if record.get("note") or not record.get("by"):          # a refusal is no person's answer
            return None
        if request.get("document_sha256") != digest or not request_still_open(request):
            return None
        if record.get("decision") == "approved":
            check_responder(triggered_by, record.get("by"))
        return record

    def _record(self, context: Any, folder: RunFolder, decision: str, by: str | None, at: datetime, note: str,
                request: dict, expired: bool = False) -> None:
        doc = {"change": self.name, "decision": decision, "by": by, "at": at.isoformat(), "note": note,
               "document": self.document, "document_sha256": request.get("document_sha256")}
        if expired:                     # the outcome contract reads it as EXPIRED, not refused
            doc.update(expired=True, expires_at=expires_at_of(request))
        path = folder.root / f"approval_{self.name}.json"
        folder.write_json(path, doc)
        AuditLog(folder.audit, run_id=context["run_id"], task=self.task_id).append(AuditRecord(
            path=str(path), op="approve" if decision == "approved" else "reject", before=None, after=doc,
            actor=by or "policy",
            run_id=context["run_id"], task=self.task_id, dry_run=False, time=utc_now_iso()))
