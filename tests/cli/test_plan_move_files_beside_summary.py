"""A large plan's move files (plan, rollback, waves, throttles) are written by two forked children while
the plan's process builds the summary, when the machine has a core to spare
(:func:`spark_jobs.plan_job.write_beside`): the plan folder is byte for byte the one written
in-process; a plan that fails after the children started leaves none of their files."""

from __future__ import annotations

import json
import os

from cli.main import main
from kafka_zk.log_dirs import encode_log_dirs
from spark_jobs import plan_job
from tests.cli.test_plan_reads import ARTIFACTS, _bytes, _cluster

PLAN = ["plan", "decommission", "--brokers", "3", "--throttle", "1000000", "--json", "--engine", "driver"]


def _beside(monkeypatch, forked: list[bool]) -> None:
    real = plan_job.forked_call.start

    def start(call, fork=True):
        forked.append(fork)
        return real(call, fork)
    monkeypatch.setattr(plan_job, "write_beside", lambda moves: True)
    monkeypatch.setattr(plan_job.forked_call, "start", start)


def test_move_files_written_beside_the_summary_are_the_files_written_in_process(
        zk, zk_connect, tmp_path, capsys, monkeypatch) -> None:
    sizes = tmp_path / "log-dirs.txt"
    sizes.write_text(encode_log_dirs(_cluster(zk)))
    args = [*PLAN, "--sizes", str(sizes), "--zookeeper", zk_connect]
    monkeypatch.setattr(plan_job, "write_beside", lambda moves: False)
    assert main([*args, "--out", str(tmp_path / "here")]) == 0
    here = json.loads(capsys.readouterr().out)
    forked: list[bool] = []
    _beside(monkeypatch, forked)
    assert main([*args, "--out", str(tmp_path / "beside")]) == 0
    beside = json.loads(capsys.readouterr().out)
    assert forked == [True, True]
    assert _bytes(str(tmp_path / "beside")) == _bytes(str(tmp_path / "here"))
    assert beside["plan_hash"] == here["plan_hash"]


def test_a_plan_failing_while_the_child_writes_leaves_none_of_its_files(
        zk, zk_connect, tmp_path, capsys, monkeypatch) -> None:
    _cluster(zk)
    forked: list[bool] = []
    _beside(monkeypatch, forked)

    def broken(*args, **kwargs):
        raise RuntimeError("summary broke")
    monkeypatch.setattr(plan_job, "_summary", broken)
    out = tmp_path / "out"
    assert main([*PLAN, "--out", str(out), "--zookeeper", zk_connect]) != 0
    assert "summary broke" in capsys.readouterr().err
    assert forked == [True, True]
    assert not [name for name in ARTIFACTS if os.path.exists(out / name)]
