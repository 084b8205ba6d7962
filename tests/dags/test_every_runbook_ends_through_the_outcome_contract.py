"""Every one of the 14 runbooks ends through the outcome contract (issue 36), whatever machine runs it.

Walked on the DAG objects (no run): each DAG's last task is the shared notify step
(:class:`operators.reports.outcome.OutcomeNotifyOperator`, ``all_done``, after every other task),
fed by a final-report step that fills the contract (:class:`~operators.reports.outcome.OutcomeReportOperator`
or the batch machine's final report) and runs whatever happened; that step carries the final
report, plan report and live progress buttons, in the DAG as the API server serializes it; and
every task records why it failed (the cause the contract is filled with).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
REPO = Path(__file__).resolve().parents[2]
DAG_FILES = sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__")
LINKS = {"Final report", "Plan report", "Live progress", "All reports of this run"}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag


def _upstream(task) -> set[str]:
    seen: set[str] = set()
    todo = list(task.upstream_list)
    while todo:
        t = todo.pop()
        if t.task_id not in seen:
            seen.add(t.task_id)
            todo += t.upstream_list
    return seen


def test_there_are_14_runbooks() -> None:
    assert len(DAG_FILES) == 14, DAG_FILES


@pytest.mark.parametrize("dag_id", DAG_FILES)
def test_the_runbook_ends_with_its_final_report_and_the_shared_notify_fed_by_the_contract(dagbag, dag_id) -> None:
    from operators.reports.final import PreviewFinalReportOperator
    from operators.reports.outcome import (OUTCOME_LINKS, OutcomeNotifyOperator, OutcomeReportOperator, before_the_tail,
                                           record_failure)

    dag = dagbag.get_dag(dag_id)
    [notify] = [t for t in dag.tasks if isinstance(t, OutcomeNotifyOperator)]
    assert notify.trigger_rule == "all_done" and not notify.downstream_list, f"{dag_id}: notify is not last"
    assert _upstream(notify) == {t.task_id for t in dag.tasks} - {notify.task_id}, f"{dag_id}: a task after notify"
    reports = [t for t in notify.upstream_list if isinstance(t, OutcomeReportOperator)
               or (isinstance(t, PreviewFinalReportOperator) and t.kind == "final")]
    assert len(reports) == 1, f"{dag_id}: notify is not fed by one final report filling the contract"
    [report] = reports
    assert report.trigger_rule == "all_done", f"{dag_id}: {report.task_id} does not run whatever happened"
    assert LINKS == {link.name for link in OUTCOME_LINKS} <= {link.name for link in report.operator_extra_links}
    if "rehearse" in dag.task_dict:       # the reassignment runbooks rehearse their plan: one more button
        assert "Rehearsal report" in {link.name for link in report.operator_extra_links}
    for task in dag.tasks:
        assert task.on_failure_callback in (record_failure, [record_failure]), \
            f"{dag_id}.{task.task_id} does not record why it fails"
    # the tail runs on a run whose first task refused its conf: it does not refuse it again
    assert report._pre_execute_hook is before_the_tail and notify._pre_execute_hook is before_the_tail


@pytest.mark.parametrize("dag_id", DAG_FILES)
def test_the_final_reports_buttons_survive_serialization(dagbag, dag_id) -> None:
    """The API server shows the buttons from the serialized DAG (name → XCom key), not the objects."""
    from airflow.serialization.serialized_objects import OperatorSerialization

    from operators.reports.outcome import OutcomeNotifyOperator

    dag = dagbag.get_dag(dag_id)
    [notify] = [t for t in dag.tasks if isinstance(t, OutcomeNotifyOperator)]
    report_ids = {t.task_id for t in notify.upstream_list}
    served = {t: OperatorSerialization.serialize_operator(dag.task_dict[t]).get("_operator_extra_links") or {}
              for t in report_ids}
    [links] = [links for links in served.values() if links]
    assert LINKS <= set(links), f"{dag_id}: {links}"
