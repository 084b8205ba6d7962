"""What every runbook operator needs at run time: its run folder, an audited writer, the approval.

* :func:`run_folder` — the :class:`RunFolder` of the task's DAG run (``run_root``/dag/run).
* :func:`audited_writer` — the one factory of the operators' :class:`ZkWriter`: every write (or, in
  a dry run, planned write) is appended to the run's ``audit.jsonl`` with the run id and task id,
  and is first authorised by the step's :mod:`kafka_zk.authority` (:func:`plan_approval`: the
  run's ``approval.json`` must approve the plan on disk; :func:`change_approval`: the approval of
  a change document). Only :meth:`operators.base.RunbookOperator.session` calls it.
* :class:`ApprovalRecord` / :func:`require_approval` — the approval of a plan hash; execution
  refuses to start without one, or when the plan on disk hashes differently.
* :func:`plan_hash` — the hash an approver approves: the planner's ``plan.sha256``, re-checked
  against the plan's content by :func:`planning.plan_folder.read.load_plan_artifacts` (moves, targets
  and wave membership; an edited plan does not load).

Failure: :class:`ApprovalMissing` and :class:`PlanHashMismatch` name the run folder and what
to do; a plan directory without ``plan.json`` raises :class:`InvalidInput`, one whose content
does not match its hash :class:`InvalidPayload`.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from kazoo.client import KazooClient

from kafka_zk.audit import AuditLog
from kafka_zk.authority import ApprovalOnRecord, WriteAuthority
from kafka_zk.errors import InvalidInput
from procedures.run_folder import RunFolder
from kafka_zk.writer import ZkWriter
from operators.errors import ApprovalMissing, PlanHashMismatch
from planning.plan_folder.read import load_plan_artifacts

APPROVED, PRE_APPROVED, REJECTED, DRY_RUN = "approved", "pre_approved", "rejected", "dry_run"


def run_folder(context: Mapping[str, Any], run_root: str) -> RunFolder:
    """The run folder of the DAG run in ``context`` (created if missing)."""
    return RunFolder.for_run(run_root, context["dag"].dag_id, context["run_id"]).ensure()


def audited_writer(client: KazooClient, folder: RunFolder, context: Mapping[str, Any], authority: WriteAuthority,
                   dry_run: bool = False, actor: str | None = None, task: str | None = None) -> ZkWriter:
    """A writer that audits to the run folder as ``actor`` (default ``airflow:<dag>/<task>``) under
    ``task`` (default the context's task) and writes under ``authority``."""
    task_id = task or context["task"].task_id
    audit = AuditLog(folder.audit, run_id=context["run_id"], task=task_id)
    return ZkWriter(client, audit=audit, actor=actor or f"airflow:{context['dag'].dag_id}/{task_id}", dry_run=dry_run,
                    authority=authority)


def plan_approval(folder: RunFolder) -> ApprovalOnRecord:
    """Writes allowed only while ``approval.json`` approves the hash of the plan now in ``plan/``."""
    return ApprovalOnRecord(folder.approval, lambda: plan_hash(folder.plan_dir), "plan_hash", "plan")


def change_approval(folder: RunFolder, name: str, document: str) -> ApprovalOnRecord:
    """Writes allowed only while ``approval_<name>.json`` approves the sha256 of ``document`` now on disk."""
    return ApprovalOnRecord(folder.root / f"approval_{name}.json", lambda: document_hash(folder, document),
                            "document_sha256", name)


def document_hash(folder: RunFolder, document: str) -> str:
    """The sha256 of a change document in the run folder (what a change approval approves)."""
    path = folder.root / document
    if not path.is_file():
        raise ApprovalMissing(f"{path} is missing: the step that writes it must run first")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plan_hash(plan_dir: str | Path) -> str:
    """The plan's hash, after checking that the plan files still match it."""
    plan_dir = Path(plan_dir)
    if not (plan_dir / "plan.json").is_file():
        raise InvalidInput(f"{plan_dir}/plan.json does not exist: run the plan step first")
    return load_plan_artifacts(str(plan_dir)).plan_hash


@dataclass(frozen=True)
class ApprovalRecord:
    """Who decided what about which plan hash, and when (``approval.json``)."""

    decision: str
    plan_hash: str
    by: str | None
    at: str
    note: str = ""
    expired: bool = False            # refused because the request had expired (no answer, or a late one)
    expires_at: str | None = None    # when the request expired, for the outcome's wording

    @property
    def allows_execution(self) -> bool:
        return self.decision in (APPROVED, PRE_APPROVED)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def load(cls, folder: RunFolder) -> "ApprovalRecord | None":
        doc = folder.read_json(folder.approval)
        return None if doc is None else cls(**doc)


def require_approval(folder: RunFolder) -> ApprovalRecord:
    """The approval of the plan now on disk, or an error saying why execution must not start."""
    record = ApprovalRecord.load(folder)
    if record is None or not record.allows_execution:
        state = "no approval record" if record is None else f"decision {record.decision!r}"
        raise ApprovalMissing(f"missing approval — {folder.approval}: {state}; execution needs an approved plan. Re-run the "
                              "approve task and have another person approve it (docs/maintenance-windows.md: pre-approval "
                              "is a policy of the windows file, for scheduled runs only)")
    current = plan_hash(folder.plan_dir)
    if current != record.plan_hash:
        raise PlanHashMismatch(f"the plan in {folder.plan_dir} hashes to {current[:12]}…, but "
                               f"{record.by or 'policy'} approved {record.plan_hash[:12]}… at {record.at}: "
                               "the plan changed after approval. Re-plan and approve again")
    return record
