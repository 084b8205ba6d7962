"""decommission_brokers for a broker that died (issue 37): real Airflow (dag.test on SQLite), real
ZooKeeper, the emulator, the real plan step (the plan job in a child process).

* A hard-killed broker is decommissioned: every replica it held is re-created from the surviving
  in-sync replicas, no partition that had one is left under-replicated, the dead broker gets no
  throttle and is neither demoted nor waited on; a partition whose only in-sync replica was on it
  (an RF-1 topic) is named before the approval as offline and left as it is; the reports say
  what was done ("broker 6 is down: its N replicas are re-created ...").
* "replace 6 with 7", dead or alive: the moves are exactly 6's replicas, 7 in 6's position of
  each list, and the preferred leaders are where they were (7 leads where 6 was first).
* The guards wait for a broker to remove whose registration is missing for a moment: it
  re-registers 3 s after the guards start, and the run goes on.

Every end state is read back with plain kazoo.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.test_rehearse_step import approval_body
from tests.dags.scenario import RACKS, THROTTLE, TOPICS, assignment, audit, states, throttle_configs

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]

DEAD = 6
NEW = 7     # a new broker in 6's rack, holding nothing


def _conf(conn_id: str, run_root: Path, **extra) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "brokers_to_remove": [DEAD],
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 3,
            "poll_interval_s": 0.3, "rehearse": "on", **extra}


def _start(zk_server, extra_topics: dict | None = None, with_new: bool = False):
    chroot = new_chroot(zk_server)
    racks = {**RACKS, **({NEW: RACKS[DEAD]} if with_new else {})}
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=racks, speed=3600.0, seed=0)).start()
    topics = {name: (a, {p: s // 100 for p, s in sizes.items()}, None) for name, (a, sizes) in TOPICS.items()}
    topics.update(extra_topics or {})
    cluster.create_topics(topics)
    return cluster, plain_client(zk_server, chroot), zk_connection(zk_server, chroot)


def _kill_and_settle(cluster: EmulatedCluster, zk, broker: int) -> None:
    """SIGKILL ``broker`` (session closed) and wait until the controller re-elected its leaderships."""
    cluster.kill_broker(broker)

    def settled() -> bool:
        if zk.exists(f"/brokers/ids/{broker}") is not None:
            return False
        return all(st["leader"] != broker for st in states(zk).values())
    assert cluster.wait_until(settled, timeout=60)


@pytest.fixture
def stop_after() -> Iterator[list]:
    started: list = []
    yield started
    for cluster, zk in started:
        zk.stop()
        zk.close()
        cluster.stop()


def test_a_dead_broker_is_decommissioned_from_the_surviving_in_sync_replicas(zk_server, tmp_path: Path,
                                                                               stop_after) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id = _start(zk_server, {"solo": ({0: [DEAD]}, {0: 10 ** 6}, None)})
    stop_after.append((cluster, zk))
    before = assignment(zk)
    held = sum(1 for r in before.values() for b in r if b == DEAD)
    _kill_and_settle(cluster, zk, DEAD)

    result = run_dag("decommission_brokers", _conf(conn_id, tmp_path / "runs"), answer="Approve")
    assert result.state == "success", result.task_states
    folder = result.run_folder

    after, st = assignment(zk), states(zk)
    assert after[("solo", 0)] == [DEAD]                         # offline: nothing to copy from, left as it was
    for tp, replicas in after.items():
        if tp == ("solo", 0):
            continue
        assert DEAD not in replicas and len(replicas) == len(before[tp]), (tp, replicas)
        assert sorted(st[tp]["isr"]) == sorted(replicas), (tp, st[tp])    # re-created, in sync
        assert st[tp]["leader"] == replicas[0], (tp, st[tp])
    summary = json.loads((folder / "plan" / "summary.json").read_text())
    assert summary["replica_moves"] == held - 1 and summary["dead_brokers"] == {str(DEAD): held - 1}
    assert [(s["topic"], s["partition"]) for s in summary["stranded"]] == [("solo", 0)]

    throttled = {b for w in json.loads((folder / "plan" / "throttles.json").read_text())["waves"] for b in w["brokers"]}
    assert DEAD not in throttled and throttled
    written = {r["path"] for r in audit(folder) if r["op"] in ("create", "set", "delete")}
    assert f"/config/brokers/{DEAD}" not in written
    assert throttle_configs(zk) == {} and zk.exists("/admin/reassign_partitions") is None

    said = f"broker {DEAD} is down: its {held - 1} replicas are re-created from the surviving in-sync replicas"
    body = approval_body("decommission_brokers", result.run_id)     # what the approver reads
    assert said in body and "solo-0" in body and "unclean.leader.election.enable" in body
    assert said in (folder / "plan_report.md").read_text() and f"| {DEAD} (removed, down) |" in body
    assert said.replace("are re-created", "were re-created") in (folder / "final_report.md").read_text()
    assert json.loads((folder / "verify.json").read_text())["verify_drained"]["stranded_left"] == ["solo-0"]
    guards = json.loads((folder / "guards.json").read_text())
    assert any("down when planned" in c for c in guards["checks"]), guards["checks"]
    rehearsal = json.loads((folder / "rehearsal" / "rehearsal.json").read_text())
    assert "0 problems" in rehearsal["headline"], rehearsal["headline"]


@pytest.mark.parametrize("dead", [True, False], ids=["dead", "alive"])
def test_replace_puts_the_new_broker_in_the_old_ones_place(zk_server, tmp_path: Path, stop_after, dead) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id = _start(zk_server, with_new=True)
    stop_after.append((cluster, zk))
    before = assignment(zk)
    held = {tp for tp, r in before.items() if DEAD in r}
    if dead:
        _kill_and_settle(cluster, zk, DEAD)

    result = run_dag("decommission_brokers", _conf(conn_id, tmp_path / "runs", replace_with=[NEW]), answer="Approve")
    assert result.state == "success", result.task_states
    summary = json.loads((result.run_folder / "plan" / "summary.json").read_text())
    assert summary["operation"] == "replace" and summary["replica_moves"] == len(held)

    after, st = assignment(zk), states(zk)
    for tp, replicas in after.items():
        want = [NEW if b == DEAD else b for b in before[tp]]
        assert replicas == want, (tp, before[tp], replicas)            # the old one's position, nothing else
        assert sorted(st[tp]["isr"]) == sorted(replicas), (tp, st[tp])
        assert st[tp]["leader"] == replicas[0], (tp, st[tp])          # preferred leaders restored
    assert throttle_configs(zk) == {} and zk.exists("/admin/reassign_partitions") is None
    said = f"replace {DEAD} with {NEW}: broker {NEW} took exactly broker {DEAD}'s {len(held)} replica(s)"
    assert said in (result.run_folder / "final_report.md").read_text()


def _task_running(dag_id: str, task_id: str) -> bool:
    """Whether ``task_id`` of the latest run of ``dag_id`` is running (Airflow's metadata DB)."""
    from sqlalchemy import select

    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.scalars(select(TaskInstance.state).where(
            TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id)).all()
    return any(str(getattr(s, "value", s)) == "running" for s in rows)


def test_the_guards_wait_for_a_broker_to_remove_that_registers_again(zk_server, tmp_path: Path, stop_after) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id = _start(zk_server)
    stop_after.append((cluster, zk))
    run_root = tmp_path / "runs"
    seen: dict[str, float] = {}

    def blip() -> None:
        """Kill the broker to remove while the approval waits; start it again 3 s after the guards start."""
        deadline = time.monotonic() + 900
        while not list(run_root.glob("decommission_brokers/*/approval_request.json")):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        cluster.kill_broker(DEAD)
        seen["killed"] = time.time()
        while not _task_running("decommission_brokers", "guards"):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        seen["guards"] = time.time()
        time.sleep(3.0)
        cluster.restart_broker(DEAD)
        seen["restarted"] = time.time()

    thread = threading.Thread(target=blip, daemon=True)
    thread.start()
    result = run_dag("decommission_brokers", _conf(conn_id, run_root, rehearse="off"), answer="Approve",
                     answer_delay=2.0)
    thread.join(timeout=60)
    assert {"killed", "guards", "restarted"} <= set(seen), seen
    assert result.state == "success", result.task_states
    guards = json.loads((result.run_folder / "guards.json").read_text())
    assert guards["ok"] and any(f"[{DEAD}] were not registered at first" in c and "registered again" in c
                                for c in guards["checks"]), guards["checks"]
    after, st = assignment(zk), states(zk)
    assert not any(DEAD in r for r in after.values())
    assert all(sorted(st[tp]["isr"]) == sorted(r) for tp, r in after.items())
