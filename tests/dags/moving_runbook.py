"""Shared checks of the data-moving runbooks built on the skeleton (add_brokers, rebalance, ...).

Each runbook's test file runs Spark once (its happy path) and hands that plan, or a plan made by
the kernel without Spark, to cheap runs with ``plan_from``; the checks below are the safety
properties every such runbook owes: a dry run writes nothing, a rejection writes nothing, a stale
plan is refused before any write, and whatever fails mid-wave the throttles stay on while the wave
copies and the user's own throttles are restored exactly. Final state is read with plain kazoo.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from kafka_zk.connect import close, connect
from tests.dags.scenario import (TOPICS, assignment, audit, config, data_tree, plan_targets, submit_by_hand,
                                 throttle_configs)
from tests.zk_helpers import set_config_by_hand
from tests.dags.conftest import new_chroot, plain_client, zk_connection

SIZES = {TopicPartition(t, p): size for t, (_, by_p) in TOPICS.items() for p, size in by_p.items()}


def start(connect_string: str, brokers: Mapping[int, str], speed: float = 3600.0) -> EmulatedCluster:
    """The scenario's topics (tests/dags/scenario.py) on ``brokers`` (id → rack)."""
    cluster = EmulatedCluster(connect_string, ClusterSpec(brokers=dict(brokers), speed=speed, seed=0)).start()
    cluster.create_topics({name: (a, sizes, None) for name, (a, sizes) in TOPICS.items()})
    return cluster


def write_kernel_plan(connect_string: str, out: Path, make_plan: Callable, throttle: int,
                      max_moves_per_broker: int = 2) -> None:
    """``make_plan(snapshot, sizes)`` → Plan, written as the plan job writes it (no Spark)."""
    from kafka_zk.snapshot import read_snapshot
    from planning.plan_folder.write import write_plan_artifacts
    from planning.kernels.waves import WaveLimits, pack_waves
    from spark_jobs.summary import build_summary

    client = connect(connect_string)
    try:
        snap = read_snapshot(client, with_configs=False)
    finally:
        close(client)
    plan = make_plan(snap, dict(SIZES))
    limits = WaveLimits(max_moves_per_broker=max_moves_per_broker, throttle_bytes_per_s=throttle)
    waves = pack_waves(plan.moves, limits)
    write_plan_artifacts(str(out), plan, waves, build_summary(snap, plan, waves, limits, dict(SIZES)), throttle)


def zk_writes(records: list[dict]) -> list[dict]:
    return [r for r in records if r["op"] in ("create", "set", "delete")]


def counts(zk) -> dict[int, int]:
    out: dict[int, int] = {}
    for replicas in assignment(zk).values():
        for b in replicas:
            out[b] = out.get(b, 0) + 1
    return out


def assert_settled(zk, result, before: dict, users: dict) -> None:
    """Every planned partition has its target and a full ISR led by its preferred replica, the
    others are untouched, no admin node left, only the user's throttles remain."""
    targets = plan_targets(result.run_folder)
    after = assignment(zk)
    for tp, replicas in after.items():
        assert replicas == targets.get(tp, before[tp]), tp
    for (t, p), replicas in after.items():
        state = json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
        assert sorted(state["isr"]) == sorted(replicas) and state["leader"] == replicas[0], ((t, p), state)
    assert zk.exists("/admin/reassign_partitions") is None
    assert zk.exists("/admin/preferred_replica_election") is None
    assert throttle_configs(zk) == users


def set_user_throttles(zk) -> dict:
    """Throttles a user set before the run (the runbook must restore exactly these)."""
    set_config_by_hand(zk, "brokers/1", {"leader.replication.throttled.rate": "12345",
                                            "follower.replication.throttled.rate": "12345"})
    set_config_by_hand(zk, "topics/payments", {"leader.replication.throttled.replicas": "2:1",
                                                  "retention.ms": "3600000"})
    return throttle_configs(zk)


def check_dry_run_writes_nothing(dag_id: str, conf: dict, zk) -> None:
    from cli.local_run import run_dag

    before = data_tree(zk)
    result = run_dag(dag_id, {**conf, "dry_run": True})
    assert result.state == "success", result.task_states
    assert data_tree(zk) == before
    records = zk_writes(audit(result.run_folder))
    assert records and all(r["dry_run"] for r in records)
    assert any(r["path"] == "/admin/reassign_partitions" for r in records)
    assert json.loads((result.run_folder / "approval.json").read_text())["decision"] == "dry_run"


def check_rejection_writes_nothing(dag_id: str, conf: dict, zk) -> None:
    from cli.local_run import run_dag

    before = data_tree(zk)
    result = run_dag(dag_id, conf, answer="Reject", approver="bob.sre")
    assert result.answer_error is None
    for task in ("guards", "set_throttles", "execute_waves", "remove_throttles", "elect_preferred_leaders"):
        assert result.task_states[task] == "skipped", (task, result.task_states)
    assert data_tree(zk) == before
    assert not zk_writes(audit(result.run_folder))
    assert json.loads((result.run_folder / "approval.json").read_text())["decision"] == "rejected"
    assert "rejected" in (result.run_folder / "final_report.md").read_text()


def check_stale_plan_refused(dag_id: str, conf: dict, zk, cluster: EmulatedCluster, plan_dir: Path,
                             brokers: list[int]) -> None:
    """Someone moves a planned partition after the plan: guards refuse it, nothing written."""
    from cli.local_run import run_dag

    doc = json.loads((plan_dir / "plan.json").read_text())
    entry = doc["partitions"][0]
    tp = (entry["topic"], entry["partition"])
    old = assignment(zk)[tp]
    spare = next(b for b in brokers if b not in old and b not in entry["replicas"])
    drifted = [spare] + old[1:]
    submit_by_hand(zk, [(tp[0], tp[1], drifted)])
    assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None
                              and assignment(zk)[tp] == drifted, 30)
    before = data_tree(zk)
    result = run_dag(dag_id, conf, answer="Approve")
    assert result.state == "failed" and result.task_states["guards"] == "failed"
    assert result.task_states["set_throttles"] == "upstream_failed"
    guards = json.loads((result.run_folder / "guards.json").read_text())
    assert "plan is stale, re-plan" in guards["problems"][0]
    assert f"{tp[0]}-{tp[1]}: plan assumed replicas {old}, cluster has {drifted}" in guards["problems"][0]
    assert data_tree(zk) == before


def check_failure_mid_wave_restores_throttles(dag_id: str, conf: dict, zk, users: dict) -> None:
    """execute_waves times out while a wave copies: the run fails, the teardown keeps the throttles
    until the wave ends, then removes ours and restores the user's exactly."""
    from cli.local_run import run_dag

    result = run_dag(dag_id, {**conf, "wave_timeout_s": 3}, answer="Approve")
    assert result.state == "failed"
    assert result.task_states["execute_waves"] == "failed"
    assert result.task_states["remove_throttles"] == "success"
    assert any(r["path"].startswith("/config/brokers/") for r in zk_writes(audit(result.run_folder)))
    assert zk.exists("/admin/reassign_partitions") is None
    assert throttle_configs(zk) == users
    assert config(zk, "topics", "payments")["retention.ms"] == "3600000"
    assert "FAILED" in (result.run_folder / "final_report.md").read_text()


@contextmanager
def emulated(zk_server, brokers: Mapping[int, str], zk_via=None, speed: float = 3600.0) -> Iterator[tuple]:
    """The scenario's topics on ``brokers`` in a fresh chroot: (cluster, plain kazoo client, the
    Airflow connection id — through the old-server proxy ``zk_via`` if given — , connect string)."""
    chroot = new_chroot(zk_server)
    connect_string = zk_server.connect_string + chroot
    cluster = start(connect_string, brokers, speed)
    zk = plain_client(zk_server, chroot)
    try:
        yield cluster, zk, zk_connection(zk_server, chroot, zk_via), connect_string
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def check_failure_mid_wave_with_a_kernel_plan(zk_server, tmp_path: Path, brokers: Mapping[int, str], dag_id: str,
                                              make_plan: Callable, conf: Callable[..., dict]) -> None:
    """:func:`check_failure_mid_wave_restores_throttles` on a slow emulator (a wave takes ~10-30 s),
    with ``make_plan(snapshot, sizes)`` written as a plan (no Spark) and ``conf(conn_id, run_root, **extra)``."""
    from tests.dags.scenario import THROTTLE

    with emulated(zk_server, brokers, speed=40.0) as (cluster, zk, conn_id, connect_string):
        users = set_user_throttles(zk)
        write_kernel_plan(connect_string, tmp_path / "plan", make_plan, THROTTLE)
        check_failure_mid_wave_restores_throttles(dag_id, conf(conn_id, tmp_path / "runs",
                                                               plan_from=str(tmp_path / "plan")), zk, users)
