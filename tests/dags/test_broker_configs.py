"""broker_configs end to end (Airflow dag.test, the emulator as Kafka 2.4 on a real ZooKeeper).

An approved spec writes exactly one /config/brokers/<entity> node and one change notification per
entity (read back with plain kazoo; the throttle the spec does not name is kept; the emulated
broker 3 re-reads its node on its notification), the run's note and final report come from the
outcome contract, and a second run of the same spec asks nothing and writes nothing. A dry run
and a rejection write nothing; bad input through the DAG is refused at ``diff`` with nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import audit, config, data_tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "broker_configs"
BROKERS = {1: "a", 2: "b", 3: "c"}
SPEC = """brokers:
  default:
    set:
      log.cleaner.threads: "2"
      log.retention.ms: "604800000"
    delete: [max.connections.per.ip]
  3:
    set:
      num.io.threads: "16"
"""


@pytest.fixture
def env(zk_server, tmp_path: Path) -> Iterator[tuple]:
    """The emulator's three brokers; a default connection limit and broker 3's throttle already set."""
    chroot = new_chroot(zk_server)
    spec = ClusterSpec(brokers=BROKERS, speed=3600.0, seed=0)
    with EmulatedCluster(zk_server.connect_string + chroot, spec) as cluster:
        zk = plain_client(zk_server, chroot)
        try:
            zk.create("/config/brokers/<default>", b'{"version":1,"config":{"max.connections.per.ip":"100"}}',
                      makepath=True)
            zk.create("/config/brokers/3", b'{"version":1,"config":{"leader.replication.throttled.rate":"5000000"}}')
            yield cluster, zk, zk_connection(zk_server, chroot), tmp_path / "runs"
        finally:
            zk.stop()
            zk.close()


def run(env: tuple, answer: str | None = "Approve", spec: str = SPEC, **params):
    """One dag.test() of the runbook on ``env``'s cluster, the approval answered with ``answer``."""
    from cli.local_run import run_dag

    conf = dict(zk_conn_id=env[2], run_root=str(env[3]), spec=spec, verify_timeout_s=30, **params)
    return run_dag(DAG_ID, conf, answer=answer)


def run_note(run_id: str) -> str | None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run_id)).note


def notifications(zk) -> list[dict]:
    return [json.loads(zk.get(f"/config/changes/{n}")[0]) for n in sorted(zk.get_children("/config/changes"))]


def reloads(cluster, broker: int) -> int:
    """How often the emulated broker read its own config node (at start, then on each notification naming it)."""
    return sum(e.kind == "throttle_rates" and e.broker == broker for e in cluster.history())


def test_an_approved_spec_is_written_entity_by_entity_and_a_second_run_writes_nothing(env) -> None:
    cluster, zk = env[:2]
    assert cluster.wait_idle(30)
    loaded = reloads(cluster, 3)
    first = run(env)
    assert first.state == "success", first.task_states
    assert config(zk, "brokers", "<default>") == {"log.cleaner.threads": "2", "log.retention.ms": "604800000"}
    assert config(zk, "brokers", "3") == {"leader.replication.throttled.rate": "5000000", "num.io.threads": "16"}
    assert notifications(zk) == [{"version": 2, "entity_path": "brokers/<default>"},
                                 {"version": 2, "entity_path": "brokers/3"}]
    writes = [(w["op"], w["path"].rsplit("/", 1)[-1][:14]) for w in zk_writes(audit(first.run_folder))]
    assert writes == [("set", "<default>"), ("create", "config_change_"), ("set", "3"), ("create", "config_change_")]
    assert json.loads((first.run_folder / "approval_broker_configs.json").read_text())["decision"] == "approved"
    assert json.loads((first.run_folder / "verify.json").read_text())["ok"] is True
    plan = (first.run_folder / "broker_config_diff.md").read_text()
    assert "log.cleaner.threads: (not set) → 2" in plan and "max.connections.per.ip: 100 → (deleted)" in plan
    note = run_note(first.run_id)
    assert note is not None and note.startswith("SUCCEEDED:") and "written: 4 ZooKeeper write(s)" in note, note
    report = (first.run_folder / "final_report.md").read_text()
    assert "Broker configs" in report and "num.io.threads: (not set) → 16" in report
    assert json.loads((first.run_folder / "outcome.json").read_text())["written"] == 4
    assert cluster.wait_idle(30) and reloads(cluster, 3) > loaded     # broker 3 read its node on the notification
    before = data_tree(zk), notifications(zk)
    second = run(env, answer=None)
    assert second.state == "success", second.task_states
    assert second.task_states["approve"] == "skipped"
    assert not zk_writes(audit(second.run_folder))
    assert (data_tree(zk), notifications(zk)) == before
    assert "Nothing to change" in (second.run_folder / "final_report.md").read_text()
    assert "max.connections.per.ip already not set" in (second.run_folder / "broker_config_diff.md").read_text()


def test_dry_run_and_rejection_write_nothing(env) -> None:
    cluster, zk = env[:2]
    before = data_tree(zk), notifications(zk)
    dry = run(env, answer=None, dry_run=True)
    assert dry.state == "success", dry.task_states
    planned = zk_writes(audit(dry.run_folder))
    assert len(planned) == 4 and all(r["dry_run"] for r in planned)
    assert (data_tree(zk), notifications(zk)) == before
    rejected = run(env, answer="Reject")
    assert rejected.task_states["apply"] == "skipped", rejected.task_states
    assert not zk_writes(audit(rejected.run_folder))
    assert (data_tree(zk), notifications(zk)) == before
    assert run_note(rejected.run_id).startswith("REJECTED:")


@pytest.mark.parametrize("spec, words", [
    ("brokers:\n  default:\n    set:\n      broker.id: '7'\n",
     "set it in server.properties and roll the brokers with the rolling_restart runbook"),
    ("brokers:\n  9:\n    set:\n      num.io.threads: '8'\n", "broker 9 is not in the cluster (registered: 1, 2, 3)"),
], ids=["read-only key", "unknown broker"])
def test_bad_input_is_refused_at_diff_with_nothing_written(env, capfd, spec, words) -> None:
    cluster, zk = env[:2]
    before = data_tree(zk), notifications(zk)
    result = run(env, answer=None, spec=spec)
    assert result.state == "failed" and result.task_states["diff"] == "failed", result.task_states
    assert words in capfd.readouterr().out
    assert (data_tree(zk), notifications(zk)) == before
    note = run_note(result.run_id).splitlines()
    assert note[0].startswith("REFUSED: diff:") and note[1] == "written: nothing written", note
