"""``kafka-runbook plan --zookeeper`` builds the kernel input from what it read (spark_jobs/direct_input.py),
with no file written and read back and no pyarrow: the plan is byte for byte the one
``--snapshot <out>/snapshot.jsonl`` (the file it records, read by pyarrow) gives, for each kind of
selection, and the command's process never imports pyarrow, pandas, pyspark or Airflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cli.main import main
from kafka_zk.log_dirs import encode_log_dirs
from tests.cli.test_plan_reads import ARTIFACTS, _bytes, _cluster

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# one operation per kind of selection: a replica on given brokers, every partition, given topics
OPERATIONS = {
    "decommission": ["decommission", "--brokers", "3", "--throttle", "1000000", "--max-moves-per-broker", "1"],
    "rebalance": ["rebalance", "--throttle", "1000000"],
    "change-rf": ["change-rf", "--topics", "t1", "--replication-factor", "2"],
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_plan_from_zookeeper_is_byte_identical_to_the_plan_from_its_snapshot_file(
        op, zk, zk_connect, tmp_path, capsys) -> None:
    sizes = tmp_path / "log-dirs.txt"
    sizes.write_text(encode_log_dirs(_cluster(zk)))
    direct, from_file = tmp_path / "direct", tmp_path / "file"
    # --engine driver: a Spark session another test left in this process would otherwise be used
    assert main(["plan", *OPERATIONS[op], "--sizes", str(sizes), "--json", "--engine", "driver",
                 "--out", str(direct), "--zookeeper", zk_connect]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "driver_input" in summary["timings_s"] and "driver_read_aggregate" not in summary["timings_s"]
    assert main(["plan", *OPERATIONS[op], "--sizes", str(sizes), "--json", "--engine", "driver",
                 "--out", str(from_file), "--snapshot", str(direct / "snapshot.jsonl")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert "driver_read_aggregate" in again["timings_s"]          # this one read the file with pyarrow
    assert _bytes(str(from_file)) == _bytes(str(direct))
    assert again["plan_hash"] == summary["plan_hash"]


def test_the_plan_command_does_not_import_pyarrow_pandas_pyspark_or_airflow(zk, zk_connect, tmp_path) -> None:
    sizes = tmp_path / "log-dirs.txt"
    sizes.write_text(encode_log_dirs(_cluster(zk)))
    script = ("import sys; from cli.main import main; "
              f"code = main(['plan', *{OPERATIONS['decommission']!r}, '--sizes', {str(sizes)!r}, "
              f"'--zookeeper', {zk_connect!r}, '--out', {str(tmp_path / 'out')!r}]); "
              "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} "
              "& {'pyarrow', 'pandas', 'pyspark', 'airflow'})); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout, proc.stdout
    assert "Read by: driver (read from ZooKeeper into this process, no Spark cluster named)" in proc.stdout
    assert all(os.path.exists(tmp_path / "out" / name) for name in ARTIFACTS)
