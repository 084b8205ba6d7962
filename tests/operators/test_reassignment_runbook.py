"""The skeleton: a runbook built by reassignment_runbook() has the shared steps in the shared order,
with the runbook's plan, optional demotion, data check and checks where they belong."""

from __future__ import annotations

import pytest

from operators.plan.step import SparkPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param
from operators.reassignment.verify import VerifyDrainedOperator

pytestmark = pytest.mark.airflow


class _Plan(SparkPlanOperator):
    operation = "rebalance"


def _spec(**extra) -> ReassignmentRunbook:
    extra.setdefault("plan", lambda args: _Plan(**args))
    return ReassignmentRunbook(dag_id="skeleton_probe", description="probe",
                               params={"zk_conn_id": zk_conn_param(), **reassignment_params()},
                               doc_md="probe", approval_title="Probe", **extra)


def _edges(dag) -> set[tuple[str, str]]:
    return {(t.task_id, d) for t in dag.tasks for d in t.downstream_task_ids}


def test_the_bare_skeleton_runs_the_shared_steps_in_order_with_a_teardown() -> None:
    dag = reassignment_runbook(_spec())
    order = ["snapshot", "plan", "render_plan_report", "rehearse", "approve", "guards", "set_throttles",
             "execute_waves", "final_verify"]
    assert set(zip(order, order[1:])) <= _edges(dag)
    assert {("final_verify", "remove_throttles"), ("remove_throttles", "elect_preferred_leaders"),
            ("elect_preferred_leaders", "final_report"), ("final_report", "notify")} <= _edges(dag)
    assert "demote" not in dag.task_ids and "verify_data" not in dag.task_ids
    assert dag.get_task("remove_throttles").is_teardown and dag.get_task("set_throttles").is_setup
    assert dag.get_task("execute_waves").retries == 3
    assert dag.get_task("final_verify").retries == 3      # read-only: a ZooKeeper cut as it starts is waited out
    assert {dag.get_task(t).trigger_rule for t in ("final_report", "notify")} == {"all_done"}
    assert dag.get_task("approve").subject.startswith("Probe: approve plan ")
    assert dag.get_task("final_report").brokers_to_remove == []


def test_demotion_and_checks_go_where_the_runbook_says() -> None:
    dag = reassignment_runbook(_spec(demote=True, brokers_to_remove="{{ params.x }}", checks=(
        lambda args: VerifyDrainedOperator(task_id="verify_drained", **args),)))
    assert {("guards", "demote"), ("demote", "set_throttles"), ("elect_preferred_leaders", "verify_drained"),
            ("verify_drained", "final_report")} <= _edges(dag)
    assert dag.get_task("verify_drained").brokers_to_remove == "{{ params.x }}"
    assert dag.get_task("demote").retries == 3     # like execute_waves: a foreign reassignment is waited out


def test_a_plan_task_with_another_id_or_a_data_check_without_its_param_fails_at_parse_time() -> None:
    with pytest.raises(ValueError, match="task_id 'plan'"):
        reassignment_runbook(_spec(plan=lambda args: _Plan(**{**args, "task_id": "make_plan"})))
    with pytest.raises(ValueError, match="verify_data"):
        reassignment_runbook(_spec(verify_data=True))
