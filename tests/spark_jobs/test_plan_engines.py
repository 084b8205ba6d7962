"""The plan job reads its input in the driver (pyarrow, no JVM) or in Spark: same plan, byte for byte.

Each operation, with raw kafka-log-dirs sizes, a sizes.jsonl, no sizes, and the Parquet snapshot,
is planned both ways; every artifact but summary.json must be identical, and summary.json may
differ only in the timings and the engine it names. ``--engine auto`` is pinned on the choice it
makes (driver for a small snapshot with no Spark named, Spark above the threshold or when a
server or cluster master is named), and the driver reader's refusals on bad files.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs
from kafka_zk.model import Broker
from formats.sizes_file import convert_sizes
from formats.snapshot_file import write_snapshot
from spark_jobs import plan_job
from spark_jobs.engine import choose_engine
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
PLAN_FILES = ("plan.json", "rollback.json", "waves.json", "throttles.json", "election.json", "deletion.json",
              "plan.sha256")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("engines")
    snap = synthetic_cluster(15, 3, 8, 40, 3, seed=21)
    plus = dataclasses.replace(snap, brokers=dict(snap.brokers) | {
        b: Broker(b, f"r{b % 3}", "h", 9092) for b in (15, 16, 17)})
    write_snapshot(plus, str(d / "snap.jsonl"))
    write_snapshot(plus, str(d / "snap.parquet"))
    sizes = synthetic_sizes(snap, seed=22)
    replica_sizes: dict[int, dict[TopicPartition, int]] = {}
    for i, p in enumerate(snap.partitions()):
        if i % 7 == 0:
            continue                        # partitions the sizes do not list count as empty
        for k, b in enumerate(p.replicas):
            replica_sizes.setdefault(b, {})[p.tp] = sizes[p.tp] - k
    (d / "log-dirs.txt").write_text(encode_log_dirs(replica_sizes))
    convert_sizes(str(d / "log-dirs.txt"), str(d / "sizes.jsonl"))
    (d / "user.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "topic-0001", "partition": 0, "replicas": [15, 16, 17]},
        {"topic": "topic-0004", "partition": 3, "replicas": [2, 3, 16]}]}))
    return d


def _plan(d: Path, out: str, engine: str, spark, snapshot: str, *extra: str) -> dict:
    extra = tuple(str(d / x) if x.endswith(".json") and not x.startswith("-") else x for x in extra)
    args = plan_job.parse_args(["--snapshot", str(d / snapshot), "--out", str(d / out), "--engine", engine,
                                "--throttle", "1000000", *extra])
    return plan_job.execute(args, spark if engine == "spark" else None)


def assert_same_plan(a: Path, b: Path) -> None:
    """Every artifact byte-identical; summary.json equal but for timings (wall and CPU) and engine."""
    for name in PLAN_FILES:
        if (a / name).exists() or (b / name).exists():
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    sa, sb = (json.loads((x / "summary.json").read_text()) for x in (a, b))
    for s in (sa, sb):
        s.pop("timings_s")
        s.pop("cpu_s")
        s.pop("engine")
    assert sa == sb


OPERATIONS = [
    ("decommission", ["--brokers", "3,4"]),
    ("decommission", ["--brokers", "0,7,14", "--max-moves-per-broker", "2"]),
    ("add-brokers", ["--brokers", "15,16,17"]),
    ("rebalance", []),
    ("change-rf", ["--topics", "topic-0002,topic-0005", "--replication-factor", "2"]),
    ("move-topics", ["--topics", "topic-0003", "--brokers", "15,16,17"]),
    ("reassign-json", ["--reassignment-json-file", "user.json"]),
    ("election", ["--batch-size", "10"]),
    ("delete-topics", ["--topic-regex", "topic-000[0-2]", "--batch-size", "2"]),
]


@pytest.mark.parametrize("op,extra", OPERATIONS, ids=[f"{op}{i}" for i, (op, _) in enumerate(OPERATIONS)])
@pytest.mark.parametrize("sizes", ["log-dirs.txt", "sizes.jsonl", None])
def test_every_operation_plans_byte_identically_in_the_driver_and_in_spark(spark, files, op, extra,
                                                                            sizes) -> None:
    flags = ["--op", op, *extra, *(["--sizes", str(files / sizes)] if sizes else [])]
    tag = f"{op}-{abs(hash((tuple(extra), sizes)))}"
    driver = _plan(files, f"{tag}-driver", "driver", spark, "snap.jsonl", *flags)
    in_spark = _plan(files, f"{tag}-spark", "spark", spark, "snap.jsonl", *flags)
    assert driver["engine"]["engine"] == "driver" and in_spark["engine"]["engine"] == "spark"
    assert driver["plan_hash"] == in_spark["plan_hash"]
    assert_same_plan(files / f"{tag}-driver", files / f"{tag}-spark")


def test_the_parquet_snapshot_plans_alike_in_the_driver(spark, files) -> None:
    flags = ["--op", "decommission", "--brokers", "5", "--sizes", str(files / "sizes.jsonl")]
    from_parquet = _plan(files, "pq-driver", "driver", spark, "snap.parquet", *flags)
    from_json = _plan(files, "json-spark", "spark", spark, "snap.jsonl", *flags)
    assert from_parquet["plan_hash"] == from_json["plan_hash"]
    assert_same_plan(files / "pq-driver", files / "json-spark")


def test_sizes_reach_the_driver_plan(files) -> None:
    flags = ["--op", "decommission", "--brokers", "3,4"]
    sized = _plan(files, "sized", "driver", None, "snap.jsonl", *flags, "--sizes", str(files / "sizes.jsonl"))
    unsized = _plan(files, "unsized", "driver", None, "snap.jsonl", *flags)
    assert sized["bytes_moved"] > 0 and unsized["bytes_moved"] == 0
    assert sized["plan_hash"] != unsized["plan_hash"]


def test_auto_reads_a_small_snapshot_in_the_driver_and_a_named_spark_in_spark(files) -> None:
    snap = str(files / "snap.jsonl")
    size = (files / "snap.jsonl").stat().st_size
    assert choose_engine("auto", snap).engine == "driver"
    assert choose_engine("auto", snap, master="local[2]").engine == "driver"
    above = choose_engine("auto", snap, max_snapshot_bytes=size - 1)
    assert above.engine == "spark" and "--driver-max-snapshot-bytes" in above.reason
    assert choose_engine("auto", snap, remote="sc://127.0.0.1:15002").engine == "spark"
    assert choose_engine("auto", snap, master="spark://spark-master:7077").engine == "spark"
    assert choose_engine("driver", snap, master="spark://spark-master:7077").engine == "driver"
    assert choose_engine("spark", snap).engine == "spark"


def test_the_cli_reads_a_small_snapshot_in_the_driver_without_starting_spark(files) -> None:
    # as a user runs it: its own process, where no Spark session exists
    proc = subprocess.run([sys.executable, "-m", "cli.main", "plan", "decommission", "--snapshot",
                           str(files / "snap.jsonl"), "--brokers", "6", "--sizes", str(files / "sizes.jsonl"),
                           "--out", str(files / "cli-auto")], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Read by: driver (snapshot of" in proc.stdout and "driver_read_aggregate" in proc.stdout
    assert "spark" not in proc.stderr.lower()          # no JVM started: Spark prints nothing
    summary = json.loads((files / "cli-auto" / "summary.json").read_text())
    assert summary["engine"]["engine"] == "driver"


@pytest.mark.parametrize("body,fragment", [
    ("this is not json\n", "not snapshot records"),
    ('{"kind":"partition","topic":"t","partition":"zero","replicas":[1]}\n', "not snapshot records"),
    ('{"kind":"broker","id":1,"rack":"r1","host":"h","port":9092}\n', "no cluster line"),
])
def test_a_bad_snapshot_is_refused_by_the_driver_reader_and_nothing_is_written(files, body, fragment) -> None:
    bad = files / f"bad-{abs(hash(body))}.jsonl"
    bad.write_text(body)
    out = files / f"bad-out-{abs(hash(body))}"
    with pytest.raises(InvalidPayload, match=fragment):
        plan_job.execute(plan_job.parse_args(["--snapshot", str(bad), "--op", "decommission", "--brokers", "1",
                                              "--out", str(out), "--engine", "driver"]))
    assert not out.exists()


def test_a_missing_snapshot_names_the_file(files) -> None:
    missing = files / "nowhere.jsonl"
    with pytest.raises(InvalidPayload, match=f"snapshot file {missing}: no such file"):
        plan_job.execute(plan_job.parse_args(["--snapshot", str(missing), "--op", "election",
                                              "--out", str(files / "missing-out"), "--engine", "driver"]))
