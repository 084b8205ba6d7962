"""SnapshotOperator with a sizes file: the splittable sizes.jsonl and the copy as given, or a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs
from formats.sizes_file import load_sizes
from procedures.run_folder import RunFolder
from formats.sizes_file import HEADER_LINE, read_sizes_file, sizes_form
from tests.zk_helpers import register_brokers

TP = TopicPartition
REPLICAS = {1: {TP("orders", 0): 300, TP("orders", 1): 20}, 2: {TP("orders", 0): 310, TP("orders", 1): 25}}


def _run(zk_conn_id: str, run_root: Path, sizes_file: Path) -> tuple[dict, RunFolder]:
    from airflow.sdk import DAG

    from operators.plan.snapshot import SnapshotOperator

    op = SnapshotOperator(task_id="snapshot", zk_conn_id=zk_conn_id, run_root=str(run_root),
                          sizes_file=str(sizes_file))
    context = {"dag": DAG("decommission_brokers", schedule=None), "run_id": "manual__1"}
    return op.execute(context), RunFolder.for_run(run_root, "decommission_brokers", "manual__1")


def test_the_snapshot_step_writes_the_splittable_sizes_and_keeps_the_file_as_given(zk, zk_conn_id, tmp_path) -> None:
    register_brokers(zk, {1: "a", 2: "b"})
    raw = tmp_path / "log-dirs.txt"
    raw.write_text(encode_log_dirs(REPLICAS))
    summary, folder = _run(zk_conn_id, tmp_path / "runs", raw)
    assert summary["brokers"] == [1, 2]
    assert folder.partition_sizes.read_text().splitlines()[0] == HEADER_LINE
    assert read_sizes_file(str(folder.partition_sizes)) == {TP("orders", 0): 310, TP("orders", 1): 25}
    assert folder.sizes.read_bytes() == raw.read_bytes()
    assert folder.snapshot.is_file()
    # a sizes.jsonl given as sizes_file is accepted as well (form told by content)
    again, folder2 = _run(zk_conn_id, tmp_path / "runs2", folder.partition_sizes)
    assert sizes_form(str(folder2.partition_sizes)) == "partition_sizes"
    assert load_sizes(str(folder2.partition_sizes)) == load_sizes(str(raw))


def test_a_sizes_file_in_neither_form_is_refused_before_anything_is_written(zk, zk_conn_id, tmp_path) -> None:
    register_brokers(zk, {1: "a"})
    bad = tmp_path / "sizes.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1]}]}\n')
    with pytest.raises(InvalidPayload, match="'brokers' must be a list") as err:
        _run(zk_conn_id, tmp_path / "runs", bad)
    assert str(bad) in str(err.value) and "kafka-log-dirs.sh" in str(err.value)
    folder = RunFolder.for_run(tmp_path / "runs", "decommission_brokers", "manual__1")
    assert not folder.partition_sizes.exists() and not folder.sizes.exists() and not folder.snapshot.exists()
    assert [p.name for p in folder.root.iterdir()] == []
