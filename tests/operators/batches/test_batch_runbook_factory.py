"""The batch-runbook factory: a runbook built by batch_runbook() has the shared steps and gates in the
shared order; a spec missing what the gates need is refused at parse time; gated() puts the window
step before a single-change runbook's first write, keeping that write a direct downstream of its
approval (a Reject skips direct downstream tasks only)."""

from __future__ import annotations

import pytest
from airflow.sdk import Param

from operators.batches.deletion import DeleteTopicBatchesOperator, DeletionReportOperator, SelectTopicsOperator
from operators.batches.runbook import BatchRunbook, batch_runbook, gate_params, gated
from operators.reports.outcome import OutcomeNotifyOperator
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.plan.snapshot import SnapshotOperator

pytestmark = pytest.mark.airflow
PARAMS = {"zk_conn_id": zk_conn_param(), "run_root": run_root_param(), "dry_run": Param(False, type="boolean")}


def _spec(**extra) -> BatchRunbook:
    extra.setdefault("execute", lambda args: DeleteTopicBatchesOperator(task_id="delete_batches", **args))
    return BatchRunbook(dag_id="batch_probe", description="probe", params=extra.pop("params", PARAMS),
                        doc_md="probe", plan=lambda args: SelectTopicsOperator(task_id="select", **args),
                        report=lambda kind, args: DeletionReportOperator(kind=kind, **args),
                        approval_subject="Probe", **extra)


def _edges(dag) -> set[tuple[str, str]]:
    return {(t.task_id, d) for t in dag.tasks for d in t.downstream_task_ids}


def test_the_factory_chains_the_shared_steps_and_adds_the_gates_params() -> None:
    dag = batch_runbook(_spec())
    order = ["snapshot", "select", "preview_report", "approve", "delete_batches", "final_report", "notify"]
    assert set(zip(order, order[1:])) == _edges(dag)
    assert {"outside_window", "notify_conn_ids"} <= set(dag.params)
    execute = dag.get_task("delete_batches")
    assert execute.outside_window == "{{ params.outside_window }}" and execute.retries == 3
    assert execute.dry_run == "{{ params.dry_run }}"
    notify = dag.get_task("notify")
    assert isinstance(notify, OutcomeNotifyOperator) and notify.trigger_rule == "all_done"
    assert dag.get_task("final_report").trigger_rule == "all_done"


def test_a_spec_without_the_gates_params_or_with_a_writer_outside_the_batch_machine_is_refused() -> None:
    with pytest.raises(ValueError, match=r"needs the Param\(s\) \['dry_run'\]"):
        batch_runbook(_spec(params={k: v for k, v in PARAMS.items() if k != "dry_run"}))
    with pytest.raises(ValueError, match="execute must build a BatchStepOperator.*not SnapshotOperator"):
        batch_runbook(_spec(execute=lambda args: SnapshotOperator(task_id="x", zk_conn_id="z", run_root="r")))


def test_gated_puts_the_window_before_the_first_write_and_keeps_the_write_under_its_approval() -> None:
    from airflow.providers.standard.operators.empty import EmptyOperator

    with runbook_dag("gated_probe", "probe", gate_params(PARAMS, "gated_probe"), "probe") as dag:
        steps = [EmptyOperator(task_id=t) for t in ("diff", "approve")]
        write = SnapshotOperator(task_id="apply", trigger_rule="none_failed", **{
            k: v for k, v in ZK_STEP_ARGS.items() if k != "dry_run"})
        gated([*steps, write, EmptyOperator(task_id="final_report")], first_write=write, what="the change",
              needed="{{ False }}")
    assert {("diff", "approve"), ("approve", "window"), ("window", "apply"), ("approve", "apply"),
            ("apply", "final_report"), ("final_report", "notify")} == _edges(dag)
    assert dag.get_task("window").trigger_rule == "none_failed" and dag.get_task("window").needed == "{{ False }}"
    with pytest.raises(ValueError, match="not one of the steps"):
        with runbook_dag("gated_probe2", "probe", gate_params(PARAMS, "gated_probe2"), "probe"):
            gated([EmptyOperator(task_id="a")], first_write=EmptyOperator(task_id="b"), what="x")
