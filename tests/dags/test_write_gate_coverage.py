"""No runbook step can write to ZooKeeper outside the guarded path.

The code is read, not trusted: every module of the Airflow side is parsed for writer construction
and direct kazoo writes, and every task of every DAG whose operator code makes a write is checked
to get its writer from :meth:`operators.base.RunbookOperator.session` under the run's approval
(the throttle teardown alone under :class:`kafka_zk.authority.OwnThrottlesOnly`).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import pytest

from kafka_zk.authority import ApprovalOnRecord, OwnThrottlesOnly
from procedures.run_folder import RunFolder

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
REPO = Path(__file__).resolve().parents[2]
LAYERS = ("planning", "formats", "procedures", "operators", "dags", "cli", "spark_jobs", "kafka_sim", "replica_verify")

# what makes a ZooKeeper write (kafka_zk.admin's writing functions, the gate's own methods, the
# operators' throttle helpers)
WRITING_CALLS = {"submit_reassignment", "submit_preferred_election", "apply_throttles", "remove_throttles",
                 "record_then_apply", "pause_throttles", "resume_throttles", "mark_for_deletion", "create_topic",
                 "add_partitions", "alter_config", "delete_topic", "write_config", "move_controller_off",
                 "reelect_controller", "replace_reassignment"}
WRITER_METHODS = {"create", "set", "delete"}
KAZOO_WRITES = {"create", "set", "delete", "ensure_path", "create_async", "set_async", "delete_async",
                "transaction", "set_acls"}


def modules() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (REPO / layer).rglob("*.py"))


def calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            receiver = ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""
            yield name, receiver, node


def test_writers_are_built_in_one_place_per_caller_kind() -> None:
    """ZkWriter is built by the operators' factory, the CLI's, the emulator seeding's and the rehearsal's
    (its copy as the only authority; kafka_zk's own dry twin aside); the operators' factory is called only
    by RunbookOperator.session."""
    built, factory_callers = [], []
    for path in modules():
        for name, _, node in calls(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            if name == "ZkWriter":
                built.append(where.split(":")[0])
            if name == "audited_writer":
                factory_callers.append(where.split(":")[0])
    assert sorted(built) == ["cli/common.py", "kafka_sim/from_snapshot.py", "operators/runtime.py",
                             "procedures/rehearsal/executor.py"], built
    assert factory_callers == ["operators/base.py"], factory_callers


def test_no_module_above_kafka_zk_writes_through_kazoo_directly() -> None:
    direct = []
    for path in modules():
        if path.parts[len(REPO.parts)] == "kafka_sim":    # the emulator writes as Kafka's brokers and controller
            continue
        for name, receiver, node in calls(ast.parse(path.read_text(encoding="utf-8"))):
            if name in KAZOO_WRITES and any(k in receiver.lower() for k in ("client", "zk", "conn", "hook")):
                direct.append(f"{path.relative_to(REPO)}:{node.lineno}: {receiver}.{name}(…)")
    assert direct == []


def hands_on_a_writer(tree: ast.AST) -> bool:
    """``with self.session(...) as (client, writer)`` keeping the writer (not ``_``/``_writer``), or the
    session itself handed on (``session=lambda: self.session(context)``, the wave executor's seam): the
    step writes through code it calls (e.g. rolling_restart's Roll, procedures' WaveExecutor), so it
    counts as writing."""
    opened = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.withitem) and "session" in ast.unparse(node.context_expr):
            opened.add(id(node.context_expr))
            if isinstance(node.optional_vars, ast.Tuple) and len(node.optional_vars.elts) == 2:
                kept = node.optional_vars.elts[1]
                if isinstance(kept, ast.Name) and not kept.id.startswith("_"):
                    return True
    return any(isinstance(node, ast.Call) and ast.unparse(node.func) == "self.session" and id(node) not in opened
               for node in ast.walk(tree))


def writes(cls: type) -> bool:
    """Whether the operator's own code (its classes in operators/) makes a ZooKeeper write, or hands
    the session's writer to code that does."""
    for klass in cls.__mro__:
        module = inspect.getmodule(klass)
        if module is None or not (module.__name__.startswith("operators.") and klass.__module__ == module.__name__):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        if hands_on_a_writer(tree):
            return True
        for name, receiver, _ in calls(tree):
            if name in WRITING_CALLS or (name in WRITER_METHODS and receiver == "writer"):
                return True
    return False


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_every_task_that_writes_writes_under_the_runs_approval(dagbag, tmp_path) -> None:
    from operators.base import RunbookOperator
    from operators.reassignment.throttles import RemoveThrottlesOperator

    folder = RunFolder(tmp_path)
    writing: dict[str, set[str]] = {}
    for dag_id in sorted(dagbag.dag_ids):
        for task in dagbag.get_dag(dag_id).tasks:
            cls = type(task)
            if not writes(cls):
                continue
            writing.setdefault(cls.__name__, set()).add(f"{dag_id}.{task.task_id}")
            assert isinstance(task, RunbookOperator), f"{dag_id}.{task.task_id}: writes outside RunbookOperator.session"
            assert "session" not in vars(cls), f"{cls.__name__} overrides the guarded session"
            authority = task.write_authority(folder)
            if isinstance(task, RemoveThrottlesOperator):
                assert isinstance(authority, OwnThrottlesOnly), f"{dag_id}.{task.task_id}"
            else:
                assert isinstance(authority, ApprovalOnRecord), f"{dag_id}.{task.task_id}: {authority!r}"
                assert authority.record.parent == tmp_path
    # the scan finds the writers the issue names (so it cannot pass by finding none)
    assert {"DemoteOperator", "SetThrottlesOperator", "ExecuteWavesOperator", "RemoveThrottlesOperator",
            "ElectPreferredLeadersOperator", "DeleteTopicBatchesOperator", "ElectBatchesOperator",
            "ApplyTopicChangesOperator", "RewriteReassignmentOperator", "ForceElectionOperator",
            "MoveControllerOperator"} <= set(writing), sorted(writing)


def upstream_of(task) -> set:
    """Every task ``task`` waits for, directly or not (setups included)."""
    seen: set = set()
    todo = list(task.upstream_list)
    while todo:
        t = todo.pop()
        if t.task_id not in {s.task_id for s in seen}:
            seen.add(t)
            todo.extend(t.upstream_list)
    return seen


def calls_the_window_gate(cls: type) -> bool:
    """The step asks :func:`operators.batches.window.hold_for_window` itself before its writes."""
    return any(name == "hold_for_window" for klass in cls.__mro__ if klass.__module__.startswith("operators.")
               for name, _, _ in calls(ast.parse(textwrap.dedent(inspect.getsource(klass)))))


def test_every_task_that_writes_sits_behind_the_shared_gates(dagbag) -> None:
    """Each writing task of each DAG: an approval step before it (four eyes, the hash), the maintenance
    window checked before it writes (the batch machine, the wave guards, the window step, or the
    step's own call of the batch window gate, as rolling_restart's roll does), its
    dry run from the run's ``dry_run`` Param, and the DAG ending in a notify step that runs whatever
    happened, to the run's ``notify_conn_ids``. Audit and approval-at-the-write: the test above."""
    from operators.approval.change import ChangeApprovalOperator
    from operators.approval.step import PlanApprovalOperator
    from operators.batches.runbook import WindowGateOperator
    from operators.batches.step import BatchStepOperator
    from operators.reassignment.guards import GuardsOperator
    from operators.reports.outcome import OutcomeNotifyOperator

    checked = set()
    for dag_id in sorted(dagbag.dag_ids):
        dag = dagbag.get_dag(dag_id)
        writers = [t for t in dag.tasks if writes(type(t))]
        if not writers:
            continue
        assert {"dry_run", "notify_conn_ids", "outside_window"} <= set(dag.params), f"{dag_id}: {sorted(dag.params)}"
        [notify] = [t for t in dag.tasks if isinstance(t, OutcomeNotifyOperator)]
        assert notify.trigger_rule == "all_done" and not notify.downstream_list, f"{dag_id}: notify is not last"
        assert {t.task_id for t in dag.tasks} - {notify.task_id} <= {t.task_id for t in upstream_of(notify)}
        for task in writers:
            before = upstream_of(task)
            where = f"{dag_id}.{task.task_id}"
            assert any(isinstance(t, (PlanApprovalOperator, ChangeApprovalOperator)) for t in before), \
                f"{where}: no approval step before it"
            assert isinstance(task, BatchStepOperator) or calls_the_window_gate(type(task)) or any(
                isinstance(t, (GuardsOperator, WindowGateOperator)) for t in before), f"{where}: no window gate"
            assert task.dry_run == "{{ params.dry_run }}", f"{where}: dry_run={task.dry_run!r}"
            checked.add(where)
    # the scan reaches every writing runbook: the reassignment skeleton's, the batch ones, the single-change ones
    assert {"decommission_brokers.execute_waves", "delete_topics.delete_batches",
            "preferred_leader_election.elect_batches", "rolling_restart.roll", "stuck_reassignment.rewrite",
            "stuck_reassignment.force_election", "stuck_reassignment.remove_throttles",
            "topic_changes.apply", "broker_configs.apply"} <= checked, sorted(checked)
