"""The plan job on a real local SparkSession (shared), one real spark-submit, and the CLI on ZooKeeper."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from planning.plan_folder.write import plan_hash
import pyspark
from kafka_zk.codecs import TopicPartition, decode_reassignment_file
from kafka_zk.model import Broker
from kafka_zk.errors import InvalidInput, InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs
from formats.sizes_file import HEADER_LINE, convert_sizes, load_sizes, read_sizes_file
from formats.snapshot_file import load_snapshot, write_snapshot
from kafka_zk.throttle_lists import throttled_replicas
from spark_jobs import plan_job
from planning.plan_folder.read import load_plan_artifacts
from planning.kernels.decommission import plan_decommission
from planning.kernels.validate import plan_violations
from planning.kernels.waves import WaveLimits, pack_waves
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes
from tests.zk_helpers import create_topic_by_hand, register_brokers

pytestmark = pytest.mark.spark
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def cluster_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan")
    snap = synthetic_cluster(15, 3, 8, 40, 3, seed=11)
    sizes = synthetic_sizes(snap, seed=12)
    write_snapshot(snap, str(d / "snap.jsonl"))
    replica_sizes: dict[int, dict[TopicPartition, int]] = {}
    for p in snap.partitions():
        for i, b in enumerate(p.replicas):
            replica_sizes.setdefault(b, {})[p.tp] = sizes[p.tp] - i  # followers a little behind
    (d / "sizes.txt").write_text(encode_log_dirs(replica_sizes))
    plus = dataclasses.replace(snap, brokers=dict(snap.brokers) | {
        b: Broker(b, f"r{b % 3}", "h", 9092) for b in (15, 16, 17)})
    write_snapshot(plus, str(d / "plus.jsonl"))
    (d / "user.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "topic-0001", "partition": 0, "replicas": [15, 16, 17]}]}))
    return d, snap


def _args(d, out: str, *extra: str) -> argparse.Namespace:
    return plan_job.parse_args(["--snapshot", str(d / "snap.jsonl"), "--out", out, *extra])


def test_decommission_job_matches_kernel_on_full_snapshot(spark, cluster_files) -> None:
    d, snap = cluster_files
    out = str(d / "out")
    summary = plan_job.run(spark, _args(d, out, "--op", "decommission", "--brokers", "3,4",
                                        "--sizes", str(d / "sizes.txt"), "--throttle", "10000000",
                                        "--seed", "3"))
    sizes = load_sizes(str(d / "sizes.txt"))
    plan = plan_decommission(load_snapshot(str(d / "snap.jsonl")), [3, 4], sizes, seed=3)
    assert plan_violations(snap, plan, [3, 4], sizes) == []
    waves = pack_waves(plan.moves, WaveLimits(None, None, 512 * 1024, 10_000_000))
    assert summary["plan_hash"] == plan_hash(plan, waves)          # Spark slice + baseline == full kernel
    assert summary["replica_moves"] == summary["replica_moves_lower_bound"] == plan.replica_moves

    art = load_plan_artifacts(out)
    assert art.plan_hash == summary["plan_hash"] and art.operation == "decommission"
    assert dict(art.target) == dict(plan.target)
    assert dict(art.rollback) == {tp: snap.partition(tp).replicas for tp in plan.target}
    assert sum(len(w.target) for w in art.waves) == len(plan.moves)
    for w in art.waves:
        assert dict(w.throttles) == throttled_replicas(w.current, w.target)
        assert all(3 not in r and 4 not in r for r in w.target.values())
    with open(os.path.join(out, "plan.json")) as f:
        entries = decode_reassignment_file(f.read())
    assert {e.tp: e.replicas for e in entries} == dict(plan.target)
    with open(os.path.join(out, "summary.json")) as f:
        doc = json.load(f)
    assert doc["predicted_seconds"] >= doc["lower_bound_seconds"] > 0
    assert doc["balance_after"]["replica_spread_within_rack"] == {"r0": 0, "r1": 0, "r2": 0} or \
        max(doc["balance_after"]["replica_spread_within_rack"].values()) <= \
        max(1, max(doc["balance_before"]["replica_spread_within_rack"].values()))


def test_edited_plan_is_refused(spark, cluster_files) -> None:
    d, _ = cluster_files
    out = str(d / "edited")
    plan_job.run(spark, _args(d, out, "--op", "decommission", "--brokers", "5"))
    path = os.path.join(out, "plan.json")
    doc = json.load(open(path))
    doc["partitions"][0]["replicas"] = list(reversed(doc["partitions"][0]["replicas"]))
    open(path, "w").write(json.dumps(doc))
    from kafka_zk.errors import InvalidPayload
    with pytest.raises(InvalidPayload, match="does not match plan.sha256"):
        load_plan_artifacts(out)


def test_bad_broker_writes_nothing(spark, cluster_files) -> None:
    d, _ = cluster_files
    out = str(d / "bad")
    from kafka_zk.errors import InvalidInput
    with pytest.raises(InvalidInput, match="neither registered nor hosting"):
        plan_job.run(spark, _args(d, out, "--op", "decommission", "--brokers", "99"))
    assert not os.path.exists(out)


def test_spark_submit_decommission(cluster_files) -> None:
    d, _ = cluster_files
    submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    out = str(d / "submitted")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([submit, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                           os.path.join(REPO, "spark_jobs", "plan_job.py"), "--snapshot", str(d / "snap.jsonl"),
                           "--op", "decommission", "--brokers", "3,4", "--sizes", str(d / "sizes.txt"),
                           "--throttle", "10000000", "--seed", "3", "--out", out],
                          env=env, capture_output=True, text=True, timeout=300, cwd=str(d))
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert printed["operation"] == "decommission"
    assert load_plan_artifacts(out).plan_hash == printed["plan_hash"]
    sizes = load_sizes(str(d / "sizes.txt"))                            # same plan as the kernel's
    plan = plan_decommission(load_snapshot(str(d / "snap.jsonl")), [3, 4], sizes, seed=3)
    assert printed["plan_hash"] == plan_hash(plan, pack_waves(plan.moves, WaveLimits(None, None, 512 * 1024, 10_000_000)))
    # the raw log-dirs output was converted in the driver (in a thread while Spark started) and kept
    assert read_sizes_file(os.path.join(out, "sizes.jsonl")) == load_sizes(str(d / "sizes.txt"))
    assert not [n for n in os.listdir(out) if "staged" in n]


def test_cli_plan_decommission_from_zookeeper(spark, zk, zk_connect, tmp_path, capsys) -> None:
    from cli.main import main
    from tests.zk_helpers import tree

    register_brokers(zk, {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"})
    create_topic_by_hand(zk, "orders", {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 5], 3: [4, 5, 6]})
    create_topic_by_hand(zk, "events", {0: [3, 1], 1: [6, 2]})
    before = tree(zk)
    out = str(tmp_path / "cli")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "3", "--out", out,
                 "--throttle", "1000000"]) == 0
    text = capsys.readouterr().out
    assert "Plan decommission: 4 partition(s) move, 4 new replica(s)" in text
    assert "lower bound 4 replica(s)" in text
    assert tree(zk) == before                                            # planning writes nothing
    art = load_plan_artifacts(out)
    assert all(3 not in r for r in art.target.values()) and len(art.target) == 4
    assert os.path.exists(os.path.join(out, "snapshot.jsonl"))
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "42",
                 "--out", str(tmp_path / "bad")]) == 1
    assert "neither registered nor hosting" in capsys.readouterr().err
    # the refused attempt left only its snapshot: the same folder takes the corrected command
    assert os.listdir(tmp_path / "bad") == ["snapshot.jsonl"]
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "4",
                 "--out", str(tmp_path / "bad")]) == 0
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    assert main(["plan", "decommission", "--zookeeper", zk_connect, "--brokers", "4",
                 "--out", str(tmp_path / "foreign")]) == 1
    assert "not a plan folder" in capsys.readouterr().err
    assert os.listdir(tmp_path / "foreign") == ["notes.txt"]


@pytest.mark.parametrize("op,extra,check", [
    ("add-brokers", ["--brokers", "15,16,17"], lambda s, a: s["moves"] > 0 and all(
        set(r) - set(a.rollback[tp]) <= {15, 16, 17} for tp, r in a.target.items())),
    ("change-rf", ["--topics", "topic-0002", "--replication-factor", "2"],
     lambda s, a: len(a.target) == 40 and all(len(r) == 2 for r in a.target.values())),
    ("move-topics", ["--topics", "topic-0003", "--brokers", "15,16,17"],
     lambda s, a: len(a.target) == 40 and all(set(r) == {15, 16, 17} for r in a.target.values())),
    ("reassign-json", ["--reassignment-json-file", "user.json"],
     lambda s, a: dict(a.target) == {TopicPartition("topic-0001", 0): (15, 16, 17)}),
    ("election", ["--batch-size", "10"], lambda s, a: s["moves"] == 0 and a.election == ()),
    ("delete-topics", ["--topic-regex", "topic-000[0-2]", "--batch-size", "2"],
     lambda s, a: a.deletion == (("topic-0000", "topic-0001"), ("topic-0002",))),
])
def test_every_operation_through_spark(spark, cluster_files, op, extra, check) -> None:
    d, _ = cluster_files
    out = str(d / f"op-{op}")
    extra = [str(d / x) if x.endswith(".json") else x for x in extra]
    args = plan_job.parse_args(["--snapshot", str(d / "plus.jsonl"), "--out", out, "--op", op,
                                "--sizes", str(d / "sizes.txt"), "--throttle", "1000000", *extra])
    summary = plan_job.run(spark, args)
    art = load_plan_artifacts(out)
    assert art.plan_hash == summary["plan_hash"]
    assert check(summary, art), summary


def test_parquet_snapshot_plans_like_json_lines(spark, cluster_files) -> None:
    d, snap = cluster_files
    write_snapshot(snap, str(d / "snap.parquet"))
    assert load_snapshot(str(d / "snap.parquet")) == load_snapshot(str(d / "snap.jsonl"))
    common = ["--op", "decommission", "--brokers", "3,4", "--sizes", str(d / "sizes.txt"),
              "--throttle", "10000000", "--seed", "3"]
    from_json = plan_job.run(spark, _args(d, str(d / "pq-json"), *common))
    from_parquet = plan_job.run(spark, plan_job.parse_args(["--snapshot", str(d / "snap.parquet"),
                                                            "--out", str(d / "pq"), *common]))
    assert from_parquet["plan_hash"] == from_json["plan_hash"]
    for name in ("plan.json", "rollback.json", "waves.json", "throttles.json"):
        assert (d / "pq" / name).read_bytes() == (d / "pq-json" / name).read_bytes()


PLAN_FILES = ("plan.json", "rollback.json", "waves.json", "throttles.json", "plan.sha256")


def test_raw_and_converted_sizes_give_byte_identical_plans(spark, cluster_files, capsys) -> None:
    from cli.main import main

    d, _ = cluster_files
    common = ["--op", "decommission", "--brokers", "3,4", "--throttle", "10000000", "--seed", "3"]
    from_raw = plan_job.run(spark, _args(d, str(d / "from-raw"), "--sizes", str(d / "sizes.txt"), *common))
    kept = d / "from-raw" / "sizes.jsonl"                              # the conversion is kept with the plan
    assert read_sizes_file(str(kept)) == load_sizes(str(d / "sizes.txt"))
    assert from_raw["timings_s"]["sizes_driver"] >= 0
    convert_sizes(str(d / "sizes.txt"), str(d / "converted.txt"))      # the snapshot step's conversion
    from_jsonl = plan_job.run(spark, _args(d, str(d / "from-jsonl"), "--sizes", str(d / "converted.txt"), *common))
    assert not (d / "from-jsonl" / "sizes.jsonl").exists()             # a sizes.jsonl is read where it is
    assert main(["plan", "decommission", "--snapshot", str(d / "snap.jsonl"), "--sizes", str(d / "sizes.txt"),
                 "--brokers", "3,4", "--throttle", "10000000", "--seed", "3", "--out", str(d / "from-cli")]) == 0
    assert from_raw["plan_hash"] in capsys.readouterr().out
    assert from_raw["plan_hash"] == from_jsonl["plan_hash"]
    assert from_raw["bytes_moved"] == from_jsonl["bytes_moved"] > 0
    for name in PLAN_FILES:
        assert (d / "from-raw" / name).read_bytes() == (d / "from-jsonl" / name).read_bytes() \
            == (d / "from-cli" / name).read_bytes(), name
    unsized = plan_job.run(spark, _args(d, str(d / "unsized"), *common))
    assert unsized["plan_hash"] != from_raw["plan_hash"]               # the sizes did reach the plan


def test_spark_reads_the_converted_sizes_as_written(spark, cluster_files) -> None:
    from spark_jobs.spark_io import read_sizes_df

    d, _ = cluster_files
    convert_sizes(str(d / "sizes.txt"), str(d / "for-spark.jsonl"))
    rows = read_sizes_df(spark, str(d / "for-spark.jsonl")).collect()
    assert {TopicPartition(r["topic"], r["partition"]): r["size"] for r in rows} == \
        read_sizes_file(str(d / "for-spark.jsonl"))
    assert len(rows) == len(read_sizes_file(str(d / "for-spark.jsonl")))


@pytest.mark.parametrize("body,fragment", [
    ("Error: the cluster is unreachable\n", "neither a partition sizes file"),
    ('{"version":1,"partitions":[]}\n', "'brokers' must be a list"),
    (HEADER_LINE + '\n{"topic":"topic-0000","partition":0}\n', "line 2"),
])
def test_sizes_in_neither_form_are_refused_and_nothing_is_written(spark, cluster_files, body, fragment) -> None:
    d, _ = cluster_files
    bad = d / "bad-sizes.txt"
    bad.write_text(body)
    out = d / "bad-sizes-out"
    with pytest.raises(InvalidPayload, match=fragment) as err:
        plan_job.run(spark, _args(d, str(out), "--op", "decommission", "--brokers", "3", "--sizes", str(bad)))
    assert str(bad) in str(err.value) and "kafka-log-dirs" in str(err.value)
    assert not out.exists()


def test_a_refused_plan_leaves_no_converted_sizes(spark, cluster_files) -> None:
    d, _ = cluster_files
    out = d / "refused-with-sizes"
    with pytest.raises(InvalidInput, match="neither registered nor hosting"):
        plan_job.run(spark, _args(d, str(out), "--op", "decommission", "--brokers", "99",
                                  "--sizes", str(d / "sizes.txt")))
    assert not out.exists()
