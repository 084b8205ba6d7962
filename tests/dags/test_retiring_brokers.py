"""A drained broker is not a destination again: decommission, then rebalance, through the DAGs.

Issue 24, finding 7: right after a decommission of broker 3 succeeded, the next plan moved replicas
back onto it (still registered, empty, the most attractive destination). Here (dag.test, the
emulator, Spark local for the rebalance) broker 4 is decommissioned (plan handed over with
``plan_from``); ``verify_drained`` records it in the run root's ``retiring_brokers.json``; a
rebalance of the three brokers left, whose counts are uneven, then plans and runs without placing
a replica on broker 4, and its plan report says why broker 4 was left out. Released with
``kafka-runbook retiring release``, broker 4 is no longer excluded. The file and the plan input are
also checked directly: a drained retiring broker that still holds replicas is refused, nothing
planned.

Issue 39: the brokers are recorded when the decommission is *approved*: one approved and then
stopped before draining (its guards refuse a plan gone stale) still keeps broker 4 out of the next
rebalance (DAG) and of ``kafka-runbook plan rebalance`` without any retiring flag (it reads the
runbooks' file by default), broker 4's own replicas left where they are; a rejected one records
nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.retiring import RetiringBroker, RetiringFile, cluster_id, exclude_from_snapshot
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.kernel_plan import write_kernel_plan
from tests.dags.scenario import assignment, data_tree, submit_by_hand

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
# broker 4 leads the drain; afterwards brokers 1 and 2 hold far more than broker 3
LAYOUT = {p: r for p, r in enumerate([(4, 1), (1, 2), (4, 2), (1, 2), (2, 1), (1, 4), (2, 4), (1, 2), (2, 1),
                                      (3, 1)])}
SIZE = 1024 * 1024


@pytest.fixture
def emulated(zk_server):
    """The four brokers on the emulator (a fresh chroot), its chroot and a plain kazoo client on it."""
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=RACKS, speed=100000.0, seed=7)).start()
    zk = plain_client(zk_server, chroot)
    try:
        yield cluster, chroot, zk
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


@pytest.fixture
def four_retiring(emulated, tmp_path: Path):
    """Topic t on brokers 1-3 (broker 4 empty), broker 4 recorded as retiring in the run root: (chroot,
    client, run root, the data tree before any run)."""
    cluster, chroot, zk = emulated
    runs = tmp_path / "runs"
    cluster.create_topics({"t": ({p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(4)}, None, None)})
    retiring = RetiringFile.load(runs / "retiring_brokers.json")
    assert retiring.add(cluster_id(zk), [4], "decommission_brokers run r0", "drained by a decommission") == [4]
    retiring.save()
    assert cluster.wait_idle(30)
    return chroot, zk, runs, data_tree(zk)


def test_a_decommissioned_broker_receives_nothing_from_the_next_plan(zk_server, emulated, tmp_path: Path,
                                                                    capsys) -> None:
    from cli.main import main
    from cli.local_run import run_dag

    cluster, chroot, zk = emulated
    runs = tmp_path / "runs"
    cluster.create_topics({"t": (LAYOUT, {p: SIZE for p in LAYOUT}, None)})
    write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [4],
                      {TopicPartition("t", p): SIZE for p in LAYOUT}, 100 * 1024 ** 2)
    conn_id = zk_connection(zk_server, chroot)
    common = {"zk_conn_id": conn_id, "run_root": str(runs), "poll_interval_s": 0.2,
              "throttle_bytes_per_sec": 100 * 1024 ** 2}
    drained = run_dag("decommission_brokers", {**common, "brokers_to_remove": [4],
                                               "plan_from": str(tmp_path / "plan")},
                      answer="Approve", approver="carol.sre")
    assert drained.state == "success", drained.task_states
    assert all(4 not in r for r in assignment(zk).values())
    retiring = json.loads((runs / "retiring_brokers.json").read_text())["clusters"]
    assert [list(c) for c in retiring.values()] == [["4"]], retiring
    counts = {b: sum(b in r for r in assignment(zk).values()) for b in (1, 2, 3)}
    assert max(counts.values()) - min(counts.values()) >= 4, counts     # a rebalance has work to do

    assert cluster.wait_idle(30)
    balanced = run_dag("rebalance", {**common, "spark_conn_id": "spark_local", "max_replicas_moved": 8,
                                     "max_moves_per_broker": 2},
                       answer="Approve", approver="carol.sre")
    assert balanced.state == "success", balanced.task_states
    assert all(4 not in r for r in assignment(zk).values()), assignment(zk)
    after = {b: sum(b in r for r in assignment(zk).values()) for b in (1, 2, 3)}
    assert max(after.values()) - min(after.values()) < max(counts.values()) - min(counts.values()), after
    report = (balanced.run_folder / "plan_report.md").read_text()
    assert "Excluded as a destination: broker 4: retiring since" in report, report[:2000]
    assert "drained by a decommission" in report

    # a person releases broker 4: it is no longer left out
    capsys.readouterr()
    file = str(runs / "retiring_brokers.json")
    connect = zk_server.connect_string + chroot
    assert main(["retiring", "list", "--zookeeper", connect, "--retiring-file", file]) == 0
    assert "broker 4: retiring since" in capsys.readouterr().out
    assert main(["retiring", "release", "--zookeeper", connect, "--retiring-file", file, "--broker", "4"]) == 0
    assert main(["retiring", "release", "--zookeeper", connect, "--retiring-file", file, "--broker", "4"]) == 1
    assert "not retiring" in capsys.readouterr().err
    assert RetiringFile.load(file).clusters == {}


def test_a_retiring_broker_that_still_holds_replicas_is_refused_and_nothing_is_planned(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    snapshot.write_text("\n".join(json.dumps(d, separators=(",", ":")) for d in [
        {"kind": "cluster", "version": 1},
        *({"kind": "broker", "id": b, "rack": r} for b, r in RACKS.items()),
        {"kind": "topic", "topic": "t", "config": {}},
        {"kind": "partition", "topic": "t", "partition": 0, "replicas": [1, 4], "isr": [1, 4], "leader": 1},
    ]) + "\n")
    four = {4: RetiringBroker(4, "2026-11-26T10:00:00Z", "decommission_brokers run r1", "drained by a decommission")}
    with pytest.raises(InvalidInput, match=r"broker 4 is retiring .* still holds 1 replica.*brokers_to_remove"):
        exclude_from_snapshot(snapshot, tmp_path / "out.jsonl", four)
    assert not (tmp_path / "out.jsonl").exists()
    kept = exclude_from_snapshot(snapshot, tmp_path / "out.jsonl", four, removing=[4])    # being decommissioned
    assert kept.excluded == () and (tmp_path / "out.jsonl").read_text() == snapshot.read_text()
    three = {3: RetiringBroker(3, "2026-11-26T10:00:00Z", "run r0", "drained by a decommission")}
    left = exclude_from_snapshot(snapshot, tmp_path / "out.jsonl", three)
    brokers = [json.loads(x)["id"] for x in (tmp_path / "out.jsonl").read_text().splitlines()
               if json.loads(x)["kind"] == "broker"]
    assert brokers == [1, 2, 4] and left.lines() == [three[3].text()]


def test_a_reassignment_handed_in_by_a_person_may_not_place_a_replica_on_a_retiring_broker(
        zk_server, four_retiring, capfd) -> None:
    """Not only the planners: reassign_partitions, whose targets a person types, is refused at its plan
    step when a target lists a retiring broker, naming it as retiring and how to release it (not as
    "non-existent", what the plan job, which never sees a retiring broker, would say), before the plan
    job starts, any approval is asked or anything is written."""
    from cli.local_run import run_dag

    chroot, zk, runs, before = four_retiring
    onto_four = json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 4]}]})
    result = run_dag("reassign_partitions", {"zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(runs),
                                             "spark_conn_id": "spark_local", "reassignment_json": onto_four,
                                             "poll_interval_s": 0.2},
                     answer="Approve", approver="carol.sre")
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    assert result.task_states["approve"] in ("upstream_failed", "skipped"), result.task_states
    out = capfd.readouterr().out
    assert "retiring broker(s) [4] (t-0 on 4)" in out and "kafka-runbook retiring release --broker 4" in out
    assert "non-existent" not in out and "plan job:" not in out, out[-3000:]    # refused before Spark starts
    assert data_tree(zk) == before


@pytest.mark.parametrize("dag_id, conf", [
    ("move_topics", {"topics": ["t"], "brokers": [1, 4]}),
    ("add_brokers", {"new_brokers": [4]}),
])
def test_a_retiring_broker_named_as_a_destination_is_refused_as_retiring(zk_server, four_retiring, capfd,
                                                                        dag_id: str, conf: dict) -> None:
    """The runbooks whose Params name destinations (move_topics' brokers, add_brokers' new_brokers)
    refuse a retiring one at the plan step, as retiring and with the fix (not as unregistered, what the
    plan job, which never sees it, would say); nothing is written."""
    from cli.local_run import run_dag

    chroot, zk, runs, before = four_retiring
    result = run_dag(dag_id, {"zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(runs),
                              "spark_conn_id": "spark_local", "poll_interval_s": 0.2, **conf},
                     answer="Approve", approver="carol.sre")
    assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
    out = capfd.readouterr().out
    assert "broker(s) [4] are retiring (broker 4: retiring since" in out, out[-3000:]
    assert "kafka-runbook retiring release --broker 4" in out and "not registered" not in out
    assert data_tree(zk) == before


def _stale_decommission_of_four(zk_server, cluster, chroot, zk, tmp_path: Path) -> dict:
    """Topic t (LAYOUT) and a plan removing broker 4, then partition 0 moved by hand ([4, 1] → [4, 3]):
    the plan is stale, so a decommission approved with it stops at its guards, before any wave.
    Returns the run's Params."""
    cluster.create_topics({"t": (LAYOUT, {p: SIZE for p in LAYOUT}, None)})
    write_kernel_plan(zk_server.connect_string + chroot, tmp_path / "plan", [4],
                      {TopicPartition("t", p): SIZE for p in LAYOUT}, 100 * 1024 ** 2)
    submit_by_hand(zk, [("t", 0, [4, 3])])
    assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None
                              and assignment(zk)[("t", 0)] == [4, 3], 60)
    assert cluster.wait_idle(30)
    return {"zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(tmp_path / "runs"),
            "poll_interval_s": 0.2, "throttle_bytes_per_sec": 100 * 1024 ** 2, "brokers_to_remove": [4],
            "plan_from": str(tmp_path / "plan"), "rehearse": "off"}


def test_a_decommission_approved_then_stopped_before_draining_keeps_its_broker_out_of_the_next_plans(
        zk_server, emulated, tmp_path: Path, capsys, monkeypatch) -> None:
    from cli.main import main
    from cli.local_run import run_dag

    cluster, chroot, zk = emulated
    params = _stale_decommission_of_four(zk_server, cluster, chroot, zk, tmp_path)
    runs = tmp_path / "runs"
    stopped = run_dag("decommission_brokers", params, answer="Approve", approver="carol.sre")
    assert stopped.state == "failed" and stopped.task_states["guards"] == "failed", stopped.task_states
    assert stopped.task_states["execute_waves"] != "success"
    held = {tp for tp, r in assignment(zk).items() if 4 in r}
    assert len(held) == 4                                       # nothing drained
    [entries] = json.loads((runs / "retiring_brokers.json").read_text())["clusters"].values()
    assert list(entries) == ["4"] and entries["4"]["stage"] == "approved", entries
    assert entries["4"]["run_folder"] == str(stopped.run_folder.resolve())

    # kafka-runbook plan rebalance, no retiring flag: the runbooks' file (under their run root) is read
    monkeypatch.delenv("KAFKA_RUNBOOKS_RETIRING_FILE", raising=False)
    monkeypatch.setenv("KAFKA_RUNBOOKS_RUN_ROOT", str(runs))
    capsys.readouterr()
    out = tmp_path / "cli-plan"
    assert main(["plan", "rebalance", "--zookeeper", zk_server.connect_string + chroot, "--engine", "driver",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    cli_plan = json.loads((out / "plan.json").read_text())["partitions"]
    assert cli_plan and all(4 not in e["replicas"] for e in cli_plan), cli_plan
    assert "Excluded as a destination: broker 4: retiring since" in printed
    assert "decommission approved, not yet drained" in printed
    assert main(["plan", "rebalance", "--zookeeper", zk_server.connect_string + chroot, "--engine", "driver",
                 "--ignore-retiring", "--out", str(tmp_path / "cli-ignoring")]) == 0      # the flag to ignore them

    counts = {b: sum(b in r for r in assignment(zk).values()) for b in (1, 2, 3)}
    balanced = run_dag("rebalance", {k: params[k] for k in ("zk_conn_id", "run_root", "poll_interval_s",
                                                           "throttle_bytes_per_sec")}
                       | {"spark_conn_id": "spark_local", "max_replicas_moved": 8, "max_moves_per_broker": 2},
                       answer="Approve", approver="carol.sre")
    assert balanced.state == "success", balanced.task_states
    after = assignment(zk)
    assert {tp for tp, r in after.items() if 4 in r} == held     # nothing onto broker 4; its replicas stay
    moved = json.loads((balanced.run_folder / "plan" / "plan.json").read_text())["partitions"]
    assert moved and all(4 not in e["replicas"] for e in moved), moved
    after_counts = {b: sum(b in r for r in after.values()) for b in (1, 2, 3)}
    assert max(after_counts.values()) - min(after_counts.values()) < max(counts.values()) - min(counts.values())
    assert "Excluded as a destination: broker 4: retiring since" in \
        (balanced.run_folder / "plan_report.md").read_text()


def test_a_rejected_decommission_records_no_retiring_broker(zk_server, emulated, tmp_path: Path) -> None:
    from cli.local_run import run_dag

    cluster, chroot, zk = emulated
    params = _stale_decommission_of_four(zk_server, cluster, chroot, zk, tmp_path)
    rejected = run_dag("decommission_brokers", params, answer="Reject", approver="carol.sre")
    assert rejected.task_states["guards"] == "skipped", rejected.task_states
    file = tmp_path / "runs" / "retiring_brokers.json"
    assert not file.exists() or json.loads(file.read_text())["clusters"] == {}


def test_the_stage_of_a_retiring_broker_decides_whether_its_replicas_are_refused(tmp_path: Path) -> None:
    """Approved (not drained yet): its replicas are left where they are, it is no destination; drained
    and holding replicas again: refused. A drain marks an approved broker drained; the run that
    recorded a broker releases it (rejected, expired, rolled back)."""
    snapshot = tmp_path / "snapshot.jsonl"
    snapshot.write_text("\n".join(json.dumps(d, separators=(",", ":")) for d in [
        {"kind": "cluster", "version": 1},
        *({"kind": "broker", "id": b, "rack": r} for b, r in RACKS.items()),
        {"kind": "topic", "topic": "t", "config": {}},
        {"kind": "partition", "topic": "t", "partition": 0, "replicas": [1, 4], "isr": [1, 4], "leader": 1},
    ]) + "\n")
    file = RetiringFile.load(tmp_path / "retiring_brokers.json")
    assert file.add("c1", [4], "decommission_brokers run r1", "approved", stage="approved", run_folder="/runs/r1") == [4]
    kept = exclude_from_snapshot(snapshot, tmp_path / "out.jsonl", file.of("c1"))
    assert [e.broker for e in kept.excluded] == [4]
    assert '"id":4' not in (tmp_path / "out.jsonl").read_text() and '"replicas":[1,4]' in \
        (tmp_path / "out.jsonl").read_text()
    assert file.add("c1", [4], "decommission_brokers run r1", "drained") == []
    assert file.of("c1")[4].stage == "drained" and file.of("c1")[4].run_folder == "/runs/r1"
    with pytest.raises(InvalidInput, match="broker 4 is retiring .* still holds 1 replica"):
        exclude_from_snapshot(snapshot, tmp_path / "out.jsonl", file.of("c1"))
    file.save()
    again = RetiringFile.load(tmp_path / "retiring_brokers.json")
    assert again.of("c1")[4].stage == "drained"
    assert again.release_run("c1", "/runs/other") == [] and again.release_run("c1", "/runs/r1") == [4]
    assert again.of("c1") == {}
