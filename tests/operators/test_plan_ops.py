"""The add_brokers and rebalance plan steps check their Params before Spark or a copy, naming the
Param and the fix (the operators run for real; every case here is refused before Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_zk.errors import BrokerNotAvailable, InvalidInput
from procedures.run_folder import RunFolder
from formats.snapshot_file import write_snapshot
from operators.plan.balance_ops import AddBrokersPlanOperator, RebalancePlanOperator, check_new_brokers
from tests.operators.test_plan_params import _snapshot


def _run_root(tmp_path: Path, dag_id: str) -> Path:
    folder = RunFolder.for_run(tmp_path, dag_id, "manual__1").ensure()
    write_snapshot(_snapshot(), str(folder.snapshot))
    return tmp_path


def _context(dag_id: str) -> dict:
    return {"dag": SimpleNamespace(dag_id=dag_id), "run_id": "manual__1"}


def _plan_dir(tmp_path: Path, operation: str, params: dict) -> Path:
    d = tmp_path / "other-run" / "plan"
    d.mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    (d / "summary.json").write_text(json.dumps({"operation": operation, "removed_brokers": [], "params": params}))
    return d


def test_new_brokers_must_be_registered_and_not_all_of_them(tmp_path: Path) -> None:
    root = _run_root(tmp_path, "add_brokers")
    with pytest.raises(BrokerNotAvailable, match=r"new_brokers=\[6, 9\]: broker\(s\) \[9\] are not registered"):
        AddBrokersPlanOperator(task_id="plan", spark_conn_id="s", run_root=str(root),
                               new_brokers=[9, 6]).execute(_context("add_brokers"))
    with pytest.raises(InvalidInput, match="all the registered brokers"):
        AddBrokersPlanOperator(task_id="plan", spark_conn_id="s", run_root=str(root),
                               new_brokers=[1, 2, 3, 4, 5, 6]).execute(_context("add_brokers"))
    with pytest.raises(InvalidInput, match="new_brokers"):
        check_new_brokers([])
    assert check_new_brokers("8, 7") == [7, 8]


def test_a_plan_from_for_other_new_brokers_is_refused_naming_both(tmp_path: Path) -> None:
    root = _run_root(tmp_path, "add_brokers")
    plan = _plan_dir(tmp_path, "add-brokers", {"brokers": "5"})
    with pytest.raises(InvalidInput, match=r"adds broker\(s\) \[5\], but this run's new_brokers=\[6\]"):
        AddBrokersPlanOperator(task_id="plan", spark_conn_id="s", run_root=str(root), new_brokers=[6],
                               plan_from=str(plan)).execute(_context("add_brokers"))
    assert not RunFolder.for_run(root, "add_brokers", "manual__1").plan_dir.exists()


def test_rebalance_budget_and_targets_are_checked_and_a_byte_budget_needs_sizes(tmp_path: Path) -> None:
    root = _run_root(tmp_path, "rebalance")

    def run(**kw):
        RebalancePlanOperator(task_id="plan", spark_conn_id="s", run_root=str(root), **kw).execute(
            _context("rebalance"))
    with pytest.raises(InvalidInput, match="max_replicas_moved=-1"):
        run(max_replicas_moved=-1)
    with pytest.raises(InvalidInput, match="max_bytes_moved: 'lots' is not a size"):
        run(max_bytes_moved="lots")
    with pytest.raises(InvalidInput, match="target_bytes_spread_pct=-5"):
        run(target_bytes_spread_pct=-5)
    with pytest.raises(InvalidInput, match="a byte budget needs partition sizes; give sizes_file"):
        run(max_bytes_moved=1 << 30)
    plan = _plan_dir(tmp_path, "rebalance", {"max_replicas": "10", "max_bytes": ""})
    with pytest.raises(InvalidInput, match="that plan was made with budget"):
        run(max_replicas_moved=20, plan_from=str(plan))
    assert RebalancePlanOperator(task_id="plan", spark_conn_id="s", run_root=str(root), max_replicas_moved=3,
                                 target_bytes_spread_pct=12.5).job_args() == [
        "--target-replica-spread", "1", "--target-leader-spread", "1", "--target-bytes-spread", "0.125",
        "--max-replicas-moved", "3"]
