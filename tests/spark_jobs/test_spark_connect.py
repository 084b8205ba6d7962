"""Planning on a standing Spark session through Spark Connect: a real server (from the pyspark
package, on loopback), the CLI and the DAG's plan step pointed at it, no JVM started per plan.

The plans must be byte-identical to the in-driver plan of the same input
(:mod:`tests.spark_jobs.test_plan_engines` pins the driver against local Spark).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from kafka_zk.log_dirs import encode_log_dirs
from procedures.run_folder import RunFolder
from formats.snapshot_file import write_snapshot
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes
from tests import spark_connect_server
from tests.spark_jobs.test_plan_engines import assert_same_plan

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory) -> Iterator[spark_connect_server.ConnectServer]:
    server = spark_connect_server.start(tmp_path_factory.mktemp("spark-connect"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("connect-plan")
    snap = synthetic_cluster(12, 3, 6, 30, 3, seed=31)
    write_snapshot(snap, str(d / "snap.jsonl"))
    sizes = synthetic_sizes(snap, seed=32)
    replica_sizes: dict = {}
    for p in snap.partitions():
        for b in p.replicas:
            replica_sizes.setdefault(b, {})[p.tp] = sizes[p.tp]
    (d / "log-dirs.txt").write_text(encode_log_dirs(replica_sizes))
    return d


def _cli(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "cli.main", "plan", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("op,extra", [("decommission", ["--brokers", "2,7"]), ("election", [])])
def test_the_cli_plans_through_spark_connect_as_it_plans_in_the_driver(connect_server, cluster, op, extra) -> None:
    common = ["--snapshot", str(cluster / "snap.jsonl"), "--sizes", str(cluster / "log-dirs.txt"),
              "--throttle", "5000000", *extra]
    remote = _cli(op, *common, "--remote", connect_server.address, "--out", str(cluster / f"{op}-connect"))
    _cli(op, *common, "--engine", "driver", "--out", str(cluster / f"{op}-driver"))
    assert f"Read by: spark (Spark Connect {connect_server.address})" in remote.stdout
    assert_same_plan(cluster / f"{op}-connect", cluster / f"{op}-driver")
    # the server did the reading: the client process started no JVM of its own
    assert "Using Spark's default log4j profile" not in remote.stderr


def test_the_dag_plan_step_uses_a_spark_connect_connection(connect_server, cluster, tmp_path, monkeypatch) -> None:
    from operators.plan.step import DecommissionPlanOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_TEST", json.dumps(
        {"conn_type": "spark_connect", "host": "127.0.0.1", "port": connect_server.port}))
    folder = RunFolder.for_run(tmp_path, "decommission_brokers", "manual__connect").ensure()
    folder.snapshot.write_bytes((cluster / "snap.jsonl").read_bytes())
    op = DecommissionPlanOperator(task_id="plan", spark_conn_id="spark_connect_test", run_root=str(tmp_path),
                                  brokers_to_remove=[2, 7], throttle_bytes_per_sec=5_000_000)
    result = op.execute({"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": "manual__connect"})
    summary = json.loads((folder.plan_dir / "summary.json").read_text())
    assert summary["engine"] == {"engine": "spark", "reason": f"Spark Connect {connect_server.address}"}
    _cli("decommission", "--snapshot", str(cluster / "snap.jsonl"), "--brokers", "2,7", "--throttle", "5000000",
         "--engine", "driver", "--out", str(tmp_path / "driver"))
    assert result["plan_hash"] == (tmp_path / "driver" / "plan.sha256").read_text().strip()
    assert_same_plan(folder.plan_dir, tmp_path / "driver")


def test_a_spark_connect_connection_without_a_host_is_refused_before_planning(tmp_path, monkeypatch) -> None:
    from kafka_zk.errors import InvalidInput
    from operators.plan.step import DecommissionPlanOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT_EMPTY", json.dumps({"conn_type": "spark_connect"}))
    folder = RunFolder.for_run(tmp_path, "decommission_brokers", "manual__x").ensure()
    write_snapshot(synthetic_cluster(6, 3, 1, 4, 3, seed=1), str(folder.snapshot))
    op = DecommissionPlanOperator(task_id="plan", spark_conn_id="spark_connect_empty", run_root=str(tmp_path),
                                  brokers_to_remove=[2])
    with pytest.raises(InvalidInput, match="needs a host"):
        op.execute({"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": "manual__x"})
    assert not folder.plan_dir.exists()
