"""Wave progress from copied bytes (issue 12 finding 4) and the named dead ends the trigger ends
the wait on (destination not registered, controller not acting), on a real ZooKeeper and the
emulator; the log-dirs parsing and source settings they rely on."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.log_dirs import encode_log_dirs, replica_sizes
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from procedures.run_folder import RunFolder
from procedures.plan.log_dirs_source import parse_log_dirs_source, read_log_dirs
from procedures.waves.stall_causes import blocking_causes, controller_cause
from operators.triggers.clock import ManualClock
from operators.triggers.reassignment import WaveDoneTrigger
from procedures.waves.book import FROM_ISR, FROM_LOG_SIZES, WaveBook, WaveMove, WaveSpec, measure

MiB = 1024 ** 2
TP = TopicPartition("big", 0)


def _connection(monkeypatch, zk_server, chroot: str, **extra) -> str:
    conn_id = f"zk_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
        "extra": {"chroot": chroot, "connect_timeout": 5, "session_timeout": 10, **extra}}))
    return conn_id


def _book(tmp_path: Path, wave: WaveSpec) -> str:
    folder = RunFolder(tmp_path / "run").ensure()
    WaveBook("h" * 64, (wave,)).save(folder.wave_progress)
    return str(folder.root)


def _run(trigger: WaveDoneTrigger, caplog: pytest.LogCaptureFixture, name: str) -> tuple[dict, list[str]]:
    trigger._log = logging.getLogger(name)     # a stdlib logger caplog sees
    async def first() -> dict:
        events = trigger.run()
        try:
            return (await anext(events)).payload
        finally:
            await events.aclose()            # as the triggerer does after the event
    with caplog.at_level("INFO", logger=name):
        event = asyncio.run(asyncio.wait_for(first(), timeout=120))
    return event, [r.getMessage() for r in caplog.records if r.name == name]


def test_measure_reads_copied_bytes_from_follower_log_sizes() -> None:
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=100),))
    live = {TP: Partition("big", 0, (3, 2, 1), adding=(3,), removing=(1,), leader=2, isr=(1, 2))}
    assert measure(wave, live).bytes_remaining == 100 and measure(wave, live).source == FROM_ISR
    copying = measure(wave, live, {(TP, 1): 120, (TP, 2): 120, (TP, 3): 30})
    assert copying.bytes_remaining == 90 and copying.source == FROM_LOG_SIZES   # the log grew to 120
    no_size_for_3 = measure(wave, live, {(TP, 1): 120, (TP, 2): 120})
    assert no_size_for_3.bytes_remaining == 120 and no_size_for_3.source == FROM_ISR


def test_replica_sizes_are_per_broker_and_skip_future_replicas() -> None:
    text = encode_log_dirs({1: {TP: 500}, 3: {TP: 20}})
    assert replica_sizes(text) == {(TP, 1): 500, (TP, 3): 20}
    doc = json.loads(text.splitlines()[-1])
    doc["brokers"][1]["logDirs"][0]["partitions"][0]["isFuture"] = True
    assert replica_sizes(json.dumps(doc)) == {(TP, 1): 500}


def test_the_log_dirs_source_forms_and_a_stale_file(tmp_path: Path) -> None:
    assert parse_log_dirs_source({}, "c") is None
    assert str(parse_log_dirs_source({"log_dirs_source": "emulator"}, "c")) == "emulator"
    with pytest.raises(InvalidInput, match="connection 'kz': extra log_dirs_source='kafka' is not one of"):
        parse_log_dirs_source({"log_dirs_source": "kafka"}, "connection 'kz'")
    with pytest.raises(InvalidInput, match="log_dirs_max_age_s"):
        parse_log_dirs_source({"log_dirs_source": "emulator", "log_dirs_max_age_s": 0}, "c")
    out = tmp_path / "log_dirs.json"
    out.write_text(encode_log_dirs({3: {TP: 7}}))
    source = parse_log_dirs_source({"log_dirs_source": f"file:{out}", "log_dirs_max_age_s": 60}, "c")
    assert read_log_dirs(source, None).sizes == {(TP, 3): 7}
    os.utime(out, (time.time() - 600, time.time() - 600))
    stale = read_log_dirs(source, None)
    assert stale.sizes is None and "old (max 60s)" in stale.note
    cmd = parse_log_dirs_source({"log_dirs_source": f"command:{sys.executable} -c \"print(open('{out}').read())\""},
                                "c")
    assert read_log_dirs(cmd, None).sizes == {(TP, 3): 7}
    failing = parse_log_dirs_source({"log_dirs_source": f"command:{sys.executable} -c \"raise SystemExit(3)\""},
                                    "c")
    assert read_log_dirs(failing, None).sizes is None and "exit 3" in read_log_dirs(failing, None).note


def test_a_healthy_wave_copying_at_full_rate_is_not_stalled_and_shows_its_rate(
        zk_server, zk_chroot: str, zk: KazooClient, tmp_path: Path, monkeypatch, caplog) -> None:
    """Issue 12 finding 4. A 16 MiB copy throttled at 4 MiB/s shows no ISR change for ~4 s.
    Judged from ISR joins (no log-dirs source) nothing moves between joins: with a 2 s stall
    timeout it was failed as "no progress", reading "0 B/s". Judged from the followers' log
    sizes it finishes, never called stalled, at a nonzero rate with an ETA."""
    from tests.zk_helpers import set_config_by_hand

    cluster = EmulatedCluster(f"{zk_server.connect_string}{zk_chroot}", ClusterSpec(
        brokers={1: None, 2: None, 3: None}, speed=1.0, seed=0, log_dirs_every_s=0.2)).start()
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=16 * MiB),), status="submitted")
    try:
        cluster.create_topics({"big": ({0: [1, 2]}, {0: 16 * MiB}, None)})
        for broker in (1, 2, 3):      # the runbook's throttle, as set_throttles writes it
            set_config_by_hand(zk, f"brokers/{broker}", {"leader.replication.throttled.rate": str(4 * MiB),
                                                         "follower.replication.throttled.rate": str(4 * MiB)})
        set_config_by_hand(zk, "topics/big", {"leader.replication.throttled.replicas": "0:1,0:2",
                                              "follower.replication.throttled.replicas": "0:3"})
        run_dir = _book(tmp_path, wave)
        cluster.stall_replica("big", 0, 3)                 # held until both triggers below are set up
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "big", "partition": 0, "replicas": [3, 2]}]}).encode(), makepath=True)
        isr_only = WaveDoneTrigger(_connection(monkeypatch, zk_server, zk_chroot), "r", 0, time.time() + 60,
                                   run_dir, poll_interval=0.3, stall_warning_s=1, stall_timeout_s=2)
        event, _ = _run(isr_only, caplog, "tests.isr_only")
        assert event["status"] == "stalled" and event["progress_source"] == "ISR joins"  # the old behaviour
        caplog.clear()
        by_size = WaveDoneTrigger(_connection(monkeypatch, zk_server, zk_chroot, log_dirs_source="emulator"),
                                  "r", 0, time.time() + 60, run_dir, poll_interval=0.3, stall_warning_s=5,
                                  stall_timeout_s=10)   # margins for a loaded machine: bytes move at every poll

        def release() -> None:             # the copy starts (at 4 MiB/s) once the trigger is polling
            deadline = time.monotonic() + 60
            while by_size._hook is None and time.monotonic() < deadline:
                time.sleep(0.05)
            cluster.stall_replica("big", 0, 3, stalled=False)
        releaser = threading.Thread(target=release, daemon=True)
        releaser.start()
        event, lines = _run(by_size, caplog, "tests.by_size")
        releaser.join(timeout=10)
        assert event["status"] == "done", event
        polls = [line for line in lines if line.startswith("wave 0:")]
        copying = [line for line in polls if "0/1 partitions" in line]
        assert copying and all(line.endswith("(from follower log sizes)") for line in polls)
        assert not any("no progress" in line or "stalled" in line for line in lines)
        rates = [float(line.split(", ")[3].split(" MiB/s")[0]) for line in copying[1:] if " MiB/s" in line]
        assert rates and all(r > 0 for r in rates), copying     # the copy is seen while it runs
        assert any("ETA unknown" not in line for line in copying[1:])
        assert not any("ETA 0s" in line for line in copying)
    finally:
        cluster.stop()


def _snap(controller: int | None, listed: bool, started: bool, brokers=(1, 2, 3)) -> ClusterSnapshot:
    from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest

    part = (Partition("big", 0, (3, 2, 1), adding=(3,), removing=(1,), leader=2, isr=(1, 2)) if started
            else Partition("big", 0, (1, 2), leader=1, isr=(1, 2)))
    request = ReassignmentRequest((ReassignmentEntry("big", 0, (3, 2)),)) if listed else None
    return ClusterSnapshot({b: Broker(b, None, "127.0.0.1", 9092) for b in brokers},
                           {"big": Topic("big", {0: part})}, reassignment=request, controller_id=controller)


def test_controller_not_acting_is_named_from_one_snapshot_without_advice() -> None:
    """One snapshot is an observation: the forced-election advice needs evidence over polls
    (tests/operators/test_controller_evidence.py)."""
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1),))
    assert controller_cause(_snap(1, listed=True, started=True), wave) is None
    assert controller_cause(_snap(1, listed=False, started=False), wave) is None   # not submitted: not its job
    ignored = controller_cause(_snap(1, listed=True, started=False), wave)
    assert ignored.dead_end and "the controller (broker 1) has not started /admin/reassign_partitions" in str(ignored)
    assert "delete /controller" not in str(ignored)
    absent = controller_cause(_snap(None, listed=True, started=True), wave)
    assert "no controller elected (/controller is absent)" in str(absent)
    assert [c.partition for c in blocking_causes(_snap(1, listed=True, started=True, brokers=(1, 2)), wave)] == ["big-0"]


def test_a_node_the_controller_ignores_ends_the_wait_as_a_dead_end_naming_the_fix(
        zk_server, zk_chroot: str, zk: KazooClient, tmp_path: Path, monkeypatch, caplog) -> None:
    """On 2.4.1, after someone else deletes /admin/reassign_partitions the controller ignores the
    next node until it changes (docs/zookeeper.md §2.7.1): the wave would wait to its 6 h timeout.
    The trigger ends it once the controller has not started it for ``dead_end_s``; deleting
    /controller (the fix it names) makes the new controller run it."""
    cluster = EmulatedCluster(f"{zk_server.connect_string}{zk_chroot}", ClusterSpec(
        brokers={1: None, 2: None, 3: None}, speed=1000.0, seed=0)).start()
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=MiB),), status="submitted")
    try:
        cluster.create_topics({"big": ({0: [1, 2]}, {0: MiB}, None), "other": ({0: [1, 2]}, {0: MiB}, None)})
        cluster.stall_replica("other", 0, 3)
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "other", "partition": 0, "replicas": [3, 2]}]}).encode(), makepath=True)
        assert cluster.wait_until(lambda: json.loads(zk.get("/brokers/topics/other")[0]).get("adding_replicas"), 30)
        zk.delete("/admin/reassign_partitions")               # someone else deletes it...
        cluster.stall_replica("other", 0, 3, stalled=False)
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "big", "partition": 0, "replicas": [3, 2]}]}).encode())   # ...and ours is ignored
        trigger = WaveDoneTrigger(_connection(monkeypatch, zk_server, zk_chroot), "r", 0, time.time() + 600,
                                  _book(tmp_path, wave), poll_interval=0.5, dead_end_s=5)
        trigger.clock = ManualClock(time.time())
        event, lines = _run(trigger, caplog, "tests.controller")
        assert event["status"] == "stalled" and event["dead_end"] is True
        assert "cannot finish as the cluster stands" in event["message"]
        assert "has not started /admin/reassign_partitions" in event["message"]
        assert "delete /controller" in event["message"]
        assert any("ending the wait if it lasts" in line for line in lines)
        assert json.loads(zk.get("/brokers/topics/big")[0])["partitions"]["0"] == [1, 2]   # never started
        cluster.move_controller()                              # the named fix
        assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 60)
        assert json.loads(zk.get("/brokers/topics/big")[0])["partitions"]["0"] == [3, 2]
    finally:
        cluster.stop()


def test_a_destination_broker_gone_ends_the_wait_naming_it(zk_server, zk_chroot: str, zk: KazooClient,
                                                          tmp_path: Path, monkeypatch, caplog) -> None:
    """Issue 12 finding 4: "still moving: orders-0" without saying broker 3 is gone. Now the
    warning names it at once and the wait ends after ``dead_end_s`` with the fix."""
    cluster = EmulatedCluster(f"{zk_server.connect_string}{zk_chroot}", ClusterSpec(
        brokers={1: None, 2: None, 3: None}, speed=1000.0, seed=0)).start()
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=MiB),), status="submitted")
    try:
        cluster.create_topics({"big": ({0: [1, 2]}, {0: MiB}, None)})
        cluster.kill_broker(3)
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "big", "partition": 0, "replicas": [3, 2]}]}).encode(), makepath=True)
        trigger = WaveDoneTrigger(_connection(monkeypatch, zk_server, zk_chroot), "r", 0, time.time() + 600,
                                  _book(tmp_path, wave), poll_interval=0.5, dead_end_s=5)
        trigger.clock = ManualClock(time.time())
        event, lines = _run(trigger, caplog, "tests.gone")
        assert event["status"] == "stalled" and event["dead_end"] is True
        assert "big-0: destination broker(s) [3] not registered" in event["message"]
        assert "restart it, or re-plan without it" in event["message"]
        assert any("not registered" in line and "ending the wait" in line for line in lines)
    finally:
        cluster.stop()


def test_execute_waves_refuses_a_malformed_log_dirs_source_before_any_write(
        zk_server, zk_chroot: str, zk: KazooClient, tmp_path: Path, monkeypatch) -> None:
    from airflow.sdk import DAG

    from operators.reassignment.execute import ExecuteWavesOperator
    from tests.zk_helpers import tree

    before = tree(zk, "/")
    op = ExecuteWavesOperator(task_id="execute_waves", run_root=str(tmp_path),
                              zk_conn_id=_connection(monkeypatch, zk_server, zk_chroot, log_dirs_source="kafka-log-dirs"))
    context = {"dag": DAG("decommission_brokers", schedule=None), "run_id": "manual__1"}
    with pytest.raises(InvalidInput, match="log_dirs_source='kafka-log-dirs' is not one of 'command:"):
        op.execute(context)
    assert tree(zk, "/") == before


@settings(max_examples=200, deadline=None)
@given(planned=st.integers(0, 10_000), leader=st.integers(0, 10_000), held=st.integers(0, 12_000),
       more=st.integers(0, 5_000), in_isr=st.booleans())
def test_copied_bytes_only_lower_what_remains_and_never_below_zero(planned: int, leader: int, held: int, more: int,
                                                                   in_isr: bool) -> None:
    """Whatever the planned size, the leader's log and the bytes the new replica holds: what
    remains is within [0, the larger of planned and leader size]; holding more never leaves more
    to copy; a replica in the ISR has nothing left."""
    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=planned),))
    isr = (1, 2, 3) if in_isr else (1, 2)
    live = {TP: Partition("big", 0, (3, 2, 1), adding=(3,), removing=(1,), leader=2, isr=isr)}

    def remaining(h: int) -> int:
        p = measure(wave, live, {(TP, 1): leader, (TP, 2): leader, (TP, 3): h})
        assert p.source == FROM_LOG_SIZES
        return p.bytes_remaining
    now, later = remaining(held), remaining(held + more)
    assert 0 <= later <= now <= max(planned, leader, held)
    if in_isr:
        assert now == 0


def test_a_switch_of_progress_source_alone_does_not_restart_the_stall_clock() -> None:
    """Issue 24: the copy stopped while the log-dirs output still listed the new replica; when it
    lost it, progress was judged from ISR joins, whose bytes figure differs, and the stall clock
    restarted (the notice came 2 min 50 s after the copy stopped). Only a finished partition or
    bytes copied as measured by the same source count as progress."""
    from procedures.waves.book import moved

    def p(done: int, remaining: int, source: str) -> "WaveProgress":
        from procedures.waves.book import WaveProgress
        return WaveProgress(0, done, 4, remaining, 400, (), source)

    assert moved(None, p(0, 400, FROM_ISR))
    assert not moved((0, 250, FROM_LOG_SIZES), p(0, 400, FROM_ISR))       # switch: more "remaining", nothing copied
    assert not moved((0, 400, FROM_ISR), p(0, 250, FROM_LOG_SIZES))       # switch back: not a copy either
    assert not moved((0, 250, FROM_LOG_SIZES), p(0, 250, FROM_LOG_SIZES))
    assert moved((0, 250, FROM_LOG_SIZES), p(0, 200, FROM_LOG_SIZES))     # bytes copied, same source
    assert moved((0, 250, FROM_LOG_SIZES), p(1, 300, FROM_ISR))           # a partition finished
