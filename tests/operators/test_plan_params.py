"""The decommission plan step's Param checks (issue 12 findings 5 and 8), before Spark or a copy.

The operator runs for real (no Spark is reached: every case is refused first); the run folder
holds a snapshot file as the snapshot step writes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_zk.errors import InvalidInput
from procedures.run_folder import RunFolder
from formats.snapshot_file import write_snapshot
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from kafka_zk.validation import check_removal_against_cluster
from operators.plan.step import DecommissionPlanOperator, snapshot_racks

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def _context(run_id: str = "manual__1") -> dict:
    return {"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": run_id}


def _snapshot() -> ClusterSnapshot:
    brokers = {b: Broker(b, r, "127.0.0.1", 9092 + b, (), True) for b, r in RACKS.items()}
    topic = Topic("t", {0: Partition("t", 0, (6, 1), (), (), 6, 1, (6, 1), 1)}, {}, None, False, 1)
    return ClusterSnapshot(brokers, {"t": topic}, {}, None, None, frozenset(), 1, 1, 0)


@pytest.fixture
def run_root(tmp_path: Path) -> Path:
    folder = RunFolder.for_run(tmp_path, "decommission_brokers", "manual__1").ensure()
    write_snapshot(_snapshot(), str(folder.snapshot))
    return tmp_path


def _op(run_root: Path, **kw) -> DecommissionPlanOperator:
    return DecommissionPlanOperator(task_id="plan", spark_conn_id="spark_local", run_root=str(run_root), **kw)


def _plan_dir(tmp_path: Path, removed: list[int], operation: str = "decommission") -> Path:
    d = tmp_path / "other-run" / "plan"
    d.mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    (d / "summary.json").write_text(json.dumps({"operation": operation, "removed_brokers": removed}))
    return d


def test_snapshot_racks_are_read_without_the_partitions(run_root: Path) -> None:
    folder = RunFolder.for_run(run_root, "decommission_brokers", "manual__1")
    assert snapshot_racks(folder.snapshot) == RACKS


def test_plan_from_of_other_brokers_is_refused_naming_both(run_root: Path, tmp_path: Path) -> None:
    plan = _plan_dir(tmp_path, [6])
    with pytest.raises(InvalidInput) as exc:
        _op(run_root, brokers_to_remove=[5], plan_from=str(plan)).execute(_context())
    msg = str(exc.value)
    assert "broker(s) [6]" in msg and "brokers_to_remove=[5]" in msg and "plan_from" in msg
    assert not (RunFolder.for_run(run_root, "decommission_brokers", "manual__1").plan_dir).exists()


def test_plan_from_of_another_operation_is_refused(run_root: Path, tmp_path: Path) -> None:
    plan = _plan_dir(tmp_path, [6], operation="add-brokers")
    with pytest.raises(InvalidInput, match="is a add-brokers of broker"):
        _op(run_root, brokers_to_remove=[6], plan_from=str(plan)).execute(_context())


def test_a_plan_kept_in_the_run_folder_must_match_too(run_root: Path, tmp_path: Path) -> None:
    folder = RunFolder.for_run(run_root, "decommission_brokers", "manual__1")
    folder.plan_dir.mkdir()
    (folder.plan_dir / "plan.json").write_text("{}")
    (folder.plan_dir / "summary.json").write_text(json.dumps({"operation": "decommission", "removed_brokers": [6]}))
    with pytest.raises(InvalidInput, match=r"brokers_to_remove=\[4\]"):
        _op(run_root, brokers_to_remove=[4]).execute(_context())


def test_whole_rack_removal_needs_the_acknowledgement_param(run_root: Path) -> None:
    with pytest.raises(InvalidInput) as exc:
        _op(run_root, brokers_to_remove=[3, 6]).execute(_context())
    assert "rack(s) 'c'" in str(exc.value) and "allow_rack_removal=true" in str(exc.value)


@pytest.mark.parametrize("brokers,message", [
    ([9], "brokers_to_remove=[9]: broker id(s) 9 are neither registered"),
    ([1, 2, 3, 4, 5, 6], "removes every broker of the cluster"),
    ("²", "brokers_to_remove"),
    ([], "brokers_to_remove"),
])
def test_bad_brokers_name_the_param_before_spark(run_root: Path, brokers, message) -> None:
    with pytest.raises(InvalidInput) as exc:
        _op(run_root, brokers_to_remove=brokers).execute(_context())
    assert message in str(exc.value) and "--brokers" not in str(exc.value)


def test_a_dead_broker_still_holding_replicas_is_accepted_and_an_empty_unknown_id_is_not() -> None:
    racks = {b: r for b, r in RACKS.items() if b != 6}                 # 6 is down: not registered
    check_removal_against_cluster([6], racks, hosting={6: 1})
    with pytest.raises(InvalidInput, match="neither registered"):
        check_removal_against_cluster([6], racks, hosting={})


@pytest.mark.parametrize("replace_with, message", [
    ([7], "new broker(s) [7] are not registered"),
    ([1, 2], "replace_with: 2 broker(s) [1, 2] for 1 in brokers_to_remove [6]"),
])
def test_bad_replace_with_is_refused_before_spark(run_root: Path, replace_with, message) -> None:
    with pytest.raises(InvalidInput) as exc:
        _op(run_root, brokers_to_remove=[6], replace_with=replace_with).execute(_context())
    assert message in str(exc.value)


def test_plan_from_of_another_replacement_is_refused(run_root: Path, tmp_path: Path) -> None:
    plan = _plan_dir(tmp_path, [6], operation="replace")
    with pytest.raises(InvalidInput, match="that plan replaces nothing, but this run's brokers_to_remove/replace_with "
                                           "say 6:5"):
        _op(run_root, brokers_to_remove=[6], replace_with=[5], plan_from=str(plan)).execute(_context())


@pytest.mark.parametrize("rate", [2**63, 0, -5, "abc"])
def test_bad_throttle_names_the_param(run_root: Path, rate) -> None:
    with pytest.raises(InvalidInput, match="throttle_bytes_per_sec"):
        _op(run_root, brokers_to_remove=[6], throttle_bytes_per_sec=rate).execute(_context())


def test_rack_checks_pure() -> None:
    check_removal_against_cluster([6], RACKS)
    check_removal_against_cluster([3, 6], RACKS, allow_rack_removal=True)
    check_removal_against_cluster([1], {1: None, 2: None})              # no racks: nothing to empty
    with pytest.raises(InvalidInput, match="rack"):
        check_removal_against_cluster([1, 4], RACKS)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_run_root_is_one_clear_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(InvalidInput, match="run_root="):
        RunFolder.for_run(locked, "d", "r").ensure()


@pytest.mark.parametrize("root", ["/proc/kafka-runbooks", "/dev/null/runs"])
def test_run_root_that_cannot_hold_folders_is_one_clear_error(root: str) -> None:
    with pytest.raises(InvalidInput, match=f"run_root='{root}'"):
        RunFolder.for_run(root, "d", "r").ensure()
