"""The plan job with ``--capacity``: refusals write nothing, fitting plans carry the disk profile."""

from __future__ import annotations

import json
import os

import pytest

from kafka_zk.capacity import DiskCapacity, write_capacity
from kafka_zk.errors import InvalidInput
from planning.model import PlanRefused
from formats.snapshot_file import write_snapshot
from kafka_zk.log_dirs import encode_log_dirs
from spark_jobs import plan_job
from planning.kernels.loads import cluster_loads
from spark_jobs.synthetic import synthetic_cluster, synthetic_log_dirs, synthetic_sizes

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("capjob")
    snap = synthetic_cluster(9, 3, 4, 30, 3, seed=21)
    sizes = synthetic_sizes(snap, seed=22)
    write_snapshot(snap, str(d / "snap.jsonl"))
    (d / "log_dirs.json").write_text(synthetic_log_dirs(snap, sizes))
    before = cluster_loads(snap.partitions(), sorted(snap.brokers), sizes).bytes
    return d, snap, before


def _args(d, out: str, capacity: str) -> object:
    return plan_job.parse_args(["--snapshot", str(d / "snap.jsonl"), "--out", out, "--op", "decommission",
                                "--brokers", "7,8", "--sizes", str(d / "log_dirs.json"), "--capacity", capacity,
                                "--max-moves-per-broker", "2", "--throttle", "10485760"])


def test_too_little_capacity_is_refused_and_writes_nothing(spark, files) -> None:
    d, snap, before = files
    cap = str(d / "tight.json")
    write_capacity(cap, DiskCapacity({b: int(v * 1.05) for b, v in before.items()}, threshold_pct=90))
    out = d / "tight_out"
    with pytest.raises(PlanRefused, match=r"would overfill broker \d+ .* over the 90 % threshold"):
        plan_job.run(spark, _args(d, str(out), cap))
    assert not out.exists() or not (out / "plan.json").exists()


def test_enough_capacity_plans_and_reports_every_broker(spark, files) -> None:
    d, snap, before = files
    cap = str(d / "roomy.json")
    write_capacity(cap, DiskCapacity({b: 3 * v for b, v in before.items()}, threshold_pct=85))
    out = str(d / "roomy_out")
    summary = plan_job.run(spark, _args(d, out, cap))
    disk = summary["disk"]
    assert disk["checked"] and disk["status"] == "checked against capacity"
    for b, row in disk["brokers"].items():
        if int(b) not in (7, 8):
            assert row["peak"] <= row["limit"] and row["pct_after"] is not None
    on_disk = json.loads(open(os.path.join(out, "summary.json")).read())["disk"]
    assert on_disk["worst_peak_pct"] == disk["worst_peak_pct"] <= 85


def test_a_bad_capacity_file_is_refused_before_spark(files, tmp_path) -> None:
    d, _snap, _before = files
    bad = tmp_path / "bad.json"
    bad.write_text('{"brokers": {"1": -4}}')
    out = tmp_path / "out"
    with pytest.raises(InvalidInput, match="not a positive size"):
        plan_job.execute(_args(d, str(out), str(bad)), spark=None)
    assert not out.exists()


def _render_plan_report(plan_root, name: str) -> tuple:
    """The plan report and approval body exactly as RenderPlanReportOperator renders them."""
    from types import SimpleNamespace

    from procedures.run_folder import RunFolder
    from operators.reports.final import plan_values, render

    folder = RunFolder(plan_root)
    values = plan_values(folder, {"run_id": name, "dag": SimpleNamespace(dag_id="decommission_brokers")},
                         False, 10485760)
    html = plan_root / "plan_report.html"
    html.write_text(render("plan_report.html.j2", **values), encoding="utf-8")
    body = render("approval_body.md.j2", zk="kafka_zk", report_path=str(html), **values)
    return html, body


@pytest.mark.timeout(900, method="thread")     # Playwright's loop on the main thread may swallow SIGALRM
def test_html_report_with_and_without_capacity_in_chromium(spark, files) -> None:
    from tests.browser import screenshot

    d, _snap, before = files
    cap = str(d / "shot_capacity.json")
    write_capacity(cap, DiskCapacity({b: 3 * v for b, v in before.items()}, threshold_pct=85))
    with_root, without_root = d / "shot_with", d / "shot_without"
    plan_job.run(spark, _args(d, str(with_root / "plan"), cap))
    args = _args(d, str(without_root / "plan"), cap)
    args.capacity = None
    plan_job.run(spark, args)

    html, body = _render_plan_report(with_root, "with-capacity")
    png, text = screenshot(html.as_uri(), "plan_report_with_capacity", wait_for="#disk")
    assert png.stat().st_size > 10_000
    assert "peaks at" in text and "% of its capacity (threshold 85 %)" in text and "% full before" in text
    assert "Disk used, % of capacity" in text
    assert "- disk: fullest broker" in body

    html, body = _render_plan_report(without_root, "without-capacity")
    png, text = screenshot(html.as_uri(), "plan_report_without_capacity", wait_for="#disk-headline")
    assert png.stat().st_size > 10_000
    assert "capacity unknown: disk usage after the move not checked" in text and "% full before" not in text
    assert "- disk: capacity unknown: disk usage after the move not checked" in body


def test_allowed_extra_moves_read_every_partition_and_make_room(spark, tmp_path) -> None:
    from tests.spark_jobs.test_capacity import GIB
    from tests.spark_jobs.conftest import literal_cluster

    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    snap = literal_cluster({"t": {p: (6, (1, 2, 4, 5)[p % 4], (2, 4, 5, 1)[p % 4]) for p in range(6)},
                            "u": {p: (3, (1, 4)[p % 2]) for p in range(4)}}, racks)
    write_snapshot(snap, str(tmp_path / "snap.jsonl"))
    per_broker: dict = {}
    for p in snap.partitions():
        for b in p.replicas:
            per_broker.setdefault(b, {})[p.tp] = 10 * GIB
    (tmp_path / "log_dirs.json").write_text(encode_log_dirs(per_broker))
    write_capacity(str(tmp_path / "cap.json"), DiskCapacity({b: 100 * GIB for b in racks}, threshold_pct=80))
    argv = ["--snapshot", str(tmp_path / "snap.jsonl"), "--op", "decommission", "--brokers", "6",
            "--sizes", str(tmp_path / "log_dirs.json"), "--capacity", str(tmp_path / "cap.json")]
    with pytest.raises(PlanRefused, match="or allow extra moves"):
        plan_job.run(spark, plan_job.parse_args([*argv, "--out", str(tmp_path / "refused")]))
    summary = plan_job.run(spark, plan_job.parse_args([*argv, "--out", str(tmp_path / "out"), "--allow-extra-moves"]))
    assert summary["replica_moves"] == summary["replica_moves_lower_bound"] + 2
    assert any("2 extra replica move(s)" in n for n in summary["notes"])
    assert summary["disk"]["brokers"]["3"]["after"] == 80 * GIB
    moved = {(e["topic"], e["partition"]) for e in json.loads((tmp_path / "out" / "plan.json").read_text())["partitions"]}
    assert len([tp for tp in moved if tp[0] == "u"]) == 2        # slices of untouched topics reached the kernel
