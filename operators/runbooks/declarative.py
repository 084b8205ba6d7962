"""The Airflow steps every declarative-spec runbook shares (topic_changes, broker_configs):
diff → approve → apply → verify → final report, over a procedure that says what the spec is.

A runbook subclasses each base and names its files and its procedure; its DAG file takes the
shared Params from :func:`spec_params` and builds the DAG with :func:`spec_runbook` (its guide as
``doc_md``, the gates' Params, the five steps wired by :func:`spec_steps`):

* :class:`SpecDiffOperator` reads the spec (:func:`procedures.plan.declarative.spec_text`), parses it
  (:meth:`~SpecDiffOperator.parse`, refused with line and fix), diffs it against the live cluster
  (:meth:`~SpecDiffOperator.diff`) and writes the spec, the diff (JSON, what the approval pins) and
  its Markdown (the plan report the approver reads);
* :class:`SpecApprovalOperator` — the diff approved by another person in time
  (:mod:`operators.approval.change`); skipped when the diff writes nothing;
* :class:`SpecApplyOperator` writes only under that approval (the write gate asks it before each
  write) and records what :meth:`~SpecApplyOperator.apply` wrote in ``applied.json``;
* :class:`SpecVerifyOperator` reads back, bounded, until :meth:`~SpecVerifyOperator.missing` finds
  nothing (``verify.json``);
* :class:`SpecReportOperator` fills the outcome contract with the diff, what was applied and verified.

Failure: what the procedure raises (refusals before any write, :class:`~kafka_zk.errors.StalePlan`),
:class:`~operators.errors.ApprovalMissing`, :class:`ChangesNotVisible`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Sequence

from airflow.sdk import DAG, BaseOperator, Param

from kafka_zk.audit import utc_now_iso
from kafka_zk.authority import WriteAuthority
from kafka_zk.errors import KafkaZkError
from operators.approval.change import ChangeApprovalOperator, require_change_approval
from operators.base import RunbookOperator
from operators.batches.runbook import gate_params, gated
from operators.guides import runbook_guide
from operators.reports.outcome import Facts, OutcomeReportOperator
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runtime import change_approval
from procedures.plan.declarative import spec_text, wait_until_seen
from procedures.run_folder import RunFolder


class ChangesNotVisible(KafkaZkError):
    """The applied changes did not show up in the read-back within the wait."""


class SpecFiles(ABC):
    """The run-folder files and approval name of one declarative runbook (class attributes); each
    runbook's subclasses supply the procedure hooks marked abstract."""

    NAME: ClassVar[str]            # the approval's name: approval_<NAME>.json
    SPEC: ClassVar[str]            # the spec as given
    DIFF: ClassVar[str]            # the diff, JSON (what the approval pins)
    DIFF_MD: ClassVar[str]         # the diff, Markdown (the plan report)
    TITLE: ClassVar[str]           # the Markdown's title

    @abstractmethod
    def parse(self, text: str, where: str) -> Any:
        """The checked spec (the procedure's parser)."""

    def spec_of(self, folder: RunFolder) -> Any:
        path = folder.root / self.SPEC
        return self.parse(path.read_text(encoding="utf-8"), str(path))

    def approved(self, folder: RunFolder) -> dict:
        return json.loads((folder.root / self.DIFF).read_text(encoding="utf-8"))


class SpecDiffOperator(SpecFiles, RunbookOperator):
    """Parse the spec and write its diff against the live cluster."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "spec", "spec_file")

    def __init__(self, *, spec: Any = "", spec_file: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.spec_file = spec_file

    @abstractmethod
    def diff(self, client: Any, spec: Any) -> Any:
        """The procedure's diff of ``spec`` against the live cluster (``to_json``, ``text``, ``writes_nothing``)."""

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        text, where = spec_text(self.spec, self.spec_file)
        spec = self.parse(text, where)
        folder.write_text(folder.root / self.SPEC, text)
        with self.session(context) as (client, _writer):
            diff = self.diff(client, spec)
        folder.write_json(folder.root / self.DIFF, diff.to_json())
        folder.write_text(folder.root / self.DIFF_MD, f"# {self.TITLE}\n\n{diff.text()}\n")
        self.log.info("diff:\n%s", diff.text())
        return {"writes_nothing": diff.writes_nothing, "text": diff.text()}


class SpecApprovalOperator(SpecFiles, ChangeApprovalOperator):
    """The diff, approved (skipped when it writes nothing)."""

    SUBJECT: ClassVar[str]
    ALLOWS: ClassVar[str]          # exactly which writes the approval allows

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("subject", self.SUBJECT)
        super().__init__(name=self.NAME, document=self.DIFF, **kwargs)

    def wanted(self, doc: dict) -> bool:
        return not doc["writes_nothing"]

    def writes_text(self, doc: dict, folder: RunFolder) -> str:
        diff = (folder.root / self.DIFF_MD).read_text(encoding="utf-8")
        return f"{diff}\n\n**This approval allows exactly these writes**, each audited: {self.ALLOWS}"


class SpecApplyOperator(SpecFiles, RunbookOperator):
    """Apply the approved diff, if the cluster still gives the same diff."""

    def write_authority(self, folder: RunFolder) -> WriteAuthority:
        return change_approval(folder, self.NAME, self.DIFF)

    @abstractmethod
    def apply(self, client: Any, writer: Any, spec: Any, approved: dict) -> list[dict]:
        """The procedure's apply: check the diff still holds (:func:`~procedures.plan.declarative.still_to_write`),
        write what is left of it; the changes, those an earlier try had written marked ``found_applied``."""

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        approved = self.approved(folder)
        if approved["writes_nothing"]:
            self.log.info("nothing to change: the cluster already matches the spec")
            return {"applied": 0}
        if not self.is_dry_run:
            require_change_approval(folder, self.NAME, self.DIFF)
        spec = self.spec_of(folder)
        with self.session(context) as (client, writer):
            applied = self.apply(client, writer, spec, approved)
        found = sum(1 for a in applied if a.get("found_applied"))
        if found:
            self.log.warning("%d of the %d approved change(s) were already written (an earlier try of this step, "
                             "stopped mid-way): not written again", found, len(applied))
        folder.write_json(folder.root / "applied.json", {"at": utc_now_iso(), "dry_run": self.is_dry_run,
                                                         "changes": applied})
        return {"applied": len(applied)}


class SpecVerifyOperator(SpecFiles, RunbookOperator):
    """Bounded wait until the read-back shows every applied change."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "timeout_s")
    SEEN_BY: ClassVar[str] = "the brokers' view"

    def __init__(self, *, timeout_s: Any = 300, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout_s = timeout_s

    @abstractmethod
    def missing(self, client: Any, approved: dict) -> list[str]:
        """What the read-back does not show yet."""

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        approved = self.approved(folder)
        if self.is_dry_run or approved["writes_nothing"]:
            return {"verified": "nothing applied"}
        with self.session(context) as (client, _writer):
            lacking = wait_until_seen(lambda: self.missing(client, approved), float(self.timeout_s))
        if lacking:
            folder.write_json(folder.root / "verify.json", {"ok": False, "missing": lacking})
            raise ChangesNotVisible(f"after {self.timeout_s}s {self.SEEN_BY} still lacks: " + "; ".join(lacking[:10]))
        folder.write_json(folder.root / "verify.json", {"ok": True, "at": utc_now_iso()})
        return {"verified": True}


class SpecReportOperator(SpecFiles, OutcomeReportOperator):
    """A declarative runbook's part of the outcome contract: the diff, what was applied and verified."""

    WHAT: ClassVar[str]            # what the run is, for the contract
    SEEN_BY: ClassVar[str] = "the brokers' view"

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        diff_md = folder.root / self.DIFF_MD
        applied = folder.read_json(folder.root / "applied.json")
        verify = folder.read_json(folder.root / "verify.json")
        diff = diff_md.read_text(encoding="utf-8") if diff_md.exists() else ""
        lines = [diff.replace("# ", "## ", 1) or "No diff was made (the diff step did not finish).", "", "## Applied"]
        found = sum(1 for a in applied["changes"] if a.get("found_applied")) if applied else 0
        lines.append(f"- applied: {len(applied['changes'])} change(s){' (dry run: planned only)' if applied['dry_run'] else ''}"
                     + (f", {found} of them written by an earlier try of the apply step that was stopped mid-way"
                        if found else "") if applied else "- applied: nothing")
        if verify:
            lines.append(f"- verified in {self.SEEN_BY}" if verify.get("ok") else f"- NOT verified: {verify.get('missing')}")
        return Facts(what=self.WHAT, approvals=(f"approval_{self.NAME}.json",), details_md="\n".join(lines),
                     plan_md=diff,
                     summary=(f"{len(applied['changes'])} change(s) applied" if applied and not applied["dry_run"]
                              else "no change applied"),
                     cause="" if not verify or verify.get("ok") else f"not verified in {self.SEEN_BY}: "
                                                                     f"{verify.get('missing')}")


def spec_params(spec: str, spec_file: str, verify_timeout_s: int, verify: str) -> dict[str, Param]:
    """A declarative runbook's Params, each described by its DAG file (``spec``, ``spec_file``, ``verify``)."""
    return {
        "zk_conn_id": zk_conn_param(),
        "spec": Param(None, type=["null", "string"], description=spec),
        "spec_file": Param(None, type=["null", "string"], description=spec_file),
        "dry_run": Param(False, type="boolean", description="Diff, approve and plan every write (audit log); write nothing"),
        "verify_timeout_s": Param(verify_timeout_s, type="integer", minimum=1, description=verify),
        "run_root": run_root_param(),
    }


def spec_steps(steps: Sequence[type], what: str) -> list[BaseOperator]:
    """diff → approve → window → apply → verify → final_report → notify, from the runbook's five step
    classes (diff, approval, apply, verify, report), inside its ``runbook_dag`` context."""
    diff_cls, approve_cls, apply_cls, verify_cls, report_cls = steps
    diff = diff_cls(task_id="diff", spec="{{ params.spec }}", spec_file="{{ params.spec_file }}", **ZK_STEP_ARGS)
    approve = approve_cls(task_id="approve", run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
                          dry_run="{{ params.dry_run }}")
    apply = apply_cls(task_id="apply", trigger_rule="none_failed", **ZK_STEP_ARGS)
    verify = verify_cls(task_id="verify", timeout_s="{{ params.verify_timeout_s }}", **ZK_STEP_ARGS)
    report = report_cls(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)
    return gated([diff, approve, apply, verify, report], first_write=apply, what=what,
                 needed="{{ not ti.xcom_pull(task_ids='diff')['writes_nothing'] }}")


def spec_runbook(dag_id: str, description: str, params: dict[str, Param], steps: Sequence[type], what: str) -> DAG:
    """The runbook's DAG: ``docs/runbooks/<dag_id>.md`` as its ``doc_md``, ``params`` with the gates'
    Params, the steps wired by :func:`spec_steps`."""
    with runbook_dag(dag_id, description, gate_params(params, dag_id), runbook_guide(dag_id)) as dag:
        spec_steps(steps, what)
    return dag
