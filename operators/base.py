"""RunbookOperator: the shared shape of the runbook's ZooKeeper steps.

Every step names its cluster (``zk_conn_id``), its run folder root (``run_root``) and whether
this is a dry run; all three are template fields, rendered as native values from the DAG's
Params. :class:`DecommissionStep` adds ``brokers_to_remove`` for the decommission steps that read
it; every other field is declared by the operator that uses it. :meth:`RunbookOperator.session`
yields a started client and an audited writer (dry-run writers plan and audit, never write): the
only way an operator gets a writer. That writer asks :meth:`RunbookOperator.write_authority` before
every write — by default the run's approval of the plan on disk (:func:`operators.runtime.plan_approval`),
so a step that writes is guarded whether or not it checks the approval itself, and whatever
happened to the task states ("Mark success" on the approval, a clear, a retry). A step that
applies a change document overrides it with that document's approval; only the throttle teardown
writes without one (:class:`kafka_zk.authority.OwnThrottlesOnly`).

Failure: a write the authority refuses raises :class:`~operators.errors.ApprovalMissing` (not
retried) naming the record and what it holds; nothing was written. The steps' other failures are
documented in their modules.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from airflow.sdk import BaseOperator
from kazoo.client import KazooClient

from kafka_zk.authority import WriteAuthority
from kafka_zk.errors import WriteNotApproved
from procedures.run_folder import RunFolder
from kafka_zk.validation import check_brokers_to_remove
from kafka_zk.writer import ZkWriter
from operators.errors import ApprovalMissing
from operators.hooks.zookeeper import ZooKeeperHook
from operators.runtime import audited_writer, plan_approval, run_folder


def as_bool(value: Any) -> bool:
    """A Param value as a bool (native rendering gives bools; text 'true'/'false' also accepted)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


class RunbookOperator(BaseOperator):
    """Base of the runbook's ZooKeeper steps (see module docstring)."""

    template_fields: Sequence[str] = ("zk_conn_id", "run_root", "dry_run")

    def __init__(self, *, zk_conn_id: str, run_root: str, dry_run: Any = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self.run_root = run_root
        self.dry_run = dry_run

    @property
    def is_dry_run(self) -> bool:
        return as_bool(self.dry_run)

    def folder(self, context: Any) -> RunFolder:
        return run_folder(context, self.run_root)

    def write_authority(self, folder: RunFolder) -> WriteAuthority:
        """What this step's writes need: the run's approval of the plan on disk (override to narrow it)."""
        return plan_approval(folder)

    #: who the audit names as writing (None: ``airflow:<dag>/<task>``) and under which task
    audit_actor: str | None = None
    audit_task: str | None = None

    @contextmanager
    def zk_client(self, context: Any) -> Iterator[KazooClient]:
        """A started client on the step's cluster (the connection ``zk_conn_id``)."""
        with ZooKeeperHook(self.zk_conn_id) as hook:
            yield hook.get_conn()

    @contextmanager
    def session(self, context: Any) -> Iterator[tuple[KazooClient, ZkWriter]]:
        folder = self.folder(context)
        with self.zk_client(context) as client:
            writer = audited_writer(client, folder, context, self.write_authority(folder), dry_run=self.is_dry_run,
                                    actor=self.audit_actor, task=self.audit_task)
            try:
                yield client, writer
            except WriteNotApproved as exc:
                raise ApprovalMissing(str(exc)) from exc


class DecommissionStep(RunbookOperator):
    """A decommission step that reads the brokers being removed (``brokers_to_remove``, checked by
    :func:`kafka_zk.validation.check_brokers_to_remove` when first used)."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "brokers_to_remove")

    def __init__(self, *, brokers_to_remove: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.brokers_to_remove = brokers_to_remove

    @property
    def removed(self) -> frozenset[int]:
        if not self.brokers_to_remove:          # the reports still render when the Param was left empty
            return frozenset()
        return frozenset(check_brokers_to_remove(self.brokers_to_remove))
