"""``kafka-runbook rehearse``: the plan on an emulated copy, without Airflow; bad inputs refused first."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.operators.test_rehearsal import MiB, real  # noqa: F401 - the fixture


@pytest.fixture
def zk_connect(zk_server, zk_chroot: str) -> str:
    """The copy is on the --zookeeper given, never on the cluster's: one ZooKeeper version is enough."""
    return f"{zk_server.connect_string}{zk_chroot}"


def test_rehearse_prints_the_headline_and_writes_the_report(real, zk_server, capsys) -> None:  # noqa: F811
    plan = real.plan("plan", throttle=100 * MiB)
    out = real.root / "out"
    code = main(["rehearse", "--snapshot", str(real.snapshot), "--sizes", str(real.sizes), "--plan-dir", str(plan),
                 "--start", "2026-11-27T00:00:00Z", "--zookeeper", zk_server.connect_string, "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    doc = json.loads((out / "rehearsal.json").read_text())
    assert printed.out.splitlines()[0] == doc["headline"] and doc["headline"].startswith("rehearsed: ")
    assert doc["start_at"] == "2026-11-27T00:00:00+00:00" and doc["passed"] is True


def test_rehearse_refuses_an_edited_plan_and_a_bad_start_before_starting_anything(real, tmp_path, capsys) -> None:  # noqa: F811
    plan = real.plan("plan", throttle=100 * MiB)
    args = ["rehearse", "--snapshot", str(real.snapshot), "--plan-dir", str(plan), "--zookeeper", "127.0.0.1:1",
            "--out", str(tmp_path / "out")]
    assert main([*args, "--start", "tomorrow"]) == 1
    assert "--start 'tomorrow' is not an ISO time" in capsys.readouterr().err
    doc = json.loads((plan / "plan.json").read_text())
    doc["partitions"][0]["replicas"] = list(reversed(doc["partitions"][0]["replicas"]))
    (plan / "plan.json").write_text(json.dumps(doc))
    assert main(args) == 1
    assert "the plan was edited after it was made" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
