"""WaveDoneTrigger: serialize() pins path and primitives; run() on a real ZooKeeper yields one event."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from operators.triggers.clock import ManualClock
from operators.triggers.reassignment import WaveDoneTrigger
from procedures.waves.book import WaveBook, WaveMove, WaveSpec, progress_line
from tests.zk_helpers import register_brokers

TP = TopicPartition("orders", 0)


def test_serialize_pins_the_dotted_path_and_primitive_kwargs() -> None:
    trigger = WaveDoneTrigger(zk_conn_id="kz", run_id="manual__1", wave_id=3, deadline=1_900_000_000.5,
                              run_dir="/runs/x", poll_interval=1.5, stall_warning_s=60, stall_timeout_s=None,
                              dag_id="decommission_brokers", notify_conn_ids=["mail"])
    path, kwargs = trigger.serialize()
    assert path == "operators.triggers.reassignment.WaveDoneTrigger"
    assert kwargs == {"zk_conn_id": "kz", "run_id": "manual__1", "wave_id": 3, "deadline": 1_900_000_000.5,
                      "run_dir": "/runs/x", "poll_interval": 1.5, "stall_warning_s": 60.0, "stall_timeout_s": None,
                      "not_before": None, "zk_outage_s": 120.0, "throttle_bytes_per_s": None,
                      "dead_end_s": 300.0, "dag_id": "decommission_brokers", "notify_conn_ids": ["mail"]}
    assert all(isinstance(v, (str, int, float, type(None))) or v == ["mail"] for v in kwargs.values())
    assert WaveDoneTrigger(**kwargs).serialize() == (path, kwargs)  # what a restarted triggerer rebuilds


def _cluster(zk: KazooClient, replicas: list[int], isr: list[int], adding: list[int] = (),
             removing: list[int] = (), brokers: tuple[int, ...] = (1, 2, 3)) -> None:
    register_brokers(zk, {b: None for b in brokers})
    doc = {"version": 2, "partitions": {"0": replicas}, "adding_replicas": {"0": list(adding)} if adding else {},
           "removing_replicas": {"0": list(removing)} if removing else {}}
    zk.create("/brokers/topics/orders", json.dumps(doc).encode())
    zk.create("/brokers/topics/orders/partitions/0/state", json.dumps(
        {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 0, "isr": isr}).encode(),
        makepath=True)


def _book(tmp_path: Path) -> str:
    folder = RunFolder(tmp_path / "run").ensure()
    WaveBook("h" * 64, (WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1000),), status="submitted",
                                 submitted_at=time.time()),)).save(folder.wave_progress)
    return str(folder.root)


def _first_event(trigger: WaveDoneTrigger) -> dict:
    async def go():
        return await anext(trigger.run())
    return asyncio.run(asyncio.wait_for(go(), timeout=30)).payload


def test_done_when_replicas_equal_target_isr_full_and_no_admin_node(zk: KazooClient, zk_conn_id: str,
                                                                     tmp_path: Path) -> None:
    _cluster(zk, [3, 2], [2, 3])
    event = _first_event(WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 30, _book(tmp_path), poll_interval=0.1))
    assert event["status"] == "done" and event["done"] == 1 and event["total"] == 1
    assert event["bytes_remaining"] == 0


def test_timeout_at_the_absolute_deadline_with_progress(zk: KazooClient, zk_conn_id: str, tmp_path: Path) -> None:
    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1])
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"orders","partition":0,'
                                            b'"replicas":[3,2]}]}', makepath=True)
    event = _first_event(WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 0.5, _book(tmp_path), poll_interval=0.1))
    assert event["status"] == "timeout"
    assert event["done"] == 0 and event["bytes_remaining"] == 1000 and event["pending"] == ["orders-0"]


def test_a_timeout_names_the_dead_destination_and_the_stall_was_told_first(
        zk: KazooClient, zk_conn_id: str, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    """Issue 27 item 3: the timeout's message (what the report says) names the blocking cause, and
    the stall notification naming it went out (no channel here: logged, and recorded in
    notifications.jsonl) before the wait ended."""
    from operators.notifications.runbook import delivered

    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1], brokers=(1, 2))    # destination 3 is gone
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"orders","partition":0,'
                                            b'"replicas":[3,2]}]}', makepath=True)
    run_dir = _book(tmp_path)
    event = _first_event(WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 2.0, run_dir, poll_interval=0.1))
    assert event["status"] == "timeout"
    assert "orders-0: destination broker(s) [3] not registered" in event["message"], event["message"]
    assert [n["event"] for n in delivered(RunFolder(Path(run_dir)))] == ["stall"]
    out = capfd.readouterr()
    told = (out.out + out.err).split("notification stall", 1)[1]
    assert "destination broker(s) [3] not registered" in told, told[:2000]


def test_stalled_after_the_stall_timeout(zk: KazooClient, zk_conn_id: str, tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1])
    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 30, _book(tmp_path), poll_interval=0.1,
                              stall_warning_s=0.2, stall_timeout_s=0.6)
    event = _first_event(trigger)
    assert event["status"] == "stalled" and "no progress" in event["message"]


def test_error_event_when_the_progress_file_is_missing(zk: KazooClient, zk_conn_id: str, tmp_path: Path) -> None:
    _cluster(zk, [1, 2], [1, 2])
    event = _first_event(WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 30, str(tmp_path), poll_interval=0.1))
    assert event["status"] == "error" and "waves.json is missing" in event["message"]


def test_a_wave_event_maps_to_its_error_or_passes_when_done() -> None:
    from operators.errors import WaveStalled, WaveTimeout, WaveWaitFailed
    from operators.reassignment.execute import raise_for_event

    assert raise_for_event({"status": "done", "wave_id": 0})["status"] == "done"
    for status, error in (("timeout", WaveTimeout), ("stalled", WaveStalled), ("error", WaveWaitFailed),
                          ("odd", WaveWaitFailed)):
        with pytest.raises(error, match="t-0 still moving"):
            raise_for_event({"status": status, "message": "t-0 still moving"})


def test_done_is_held_back_until_not_before(zk: KazooClient, zk_conn_id: str, tmp_path: Path) -> None:
    """A wave finished at the first poll does not resume the task before ``not_before`` (the
    scheduler must first see the deferring attempt's exit). On the trigger's own (simulated)
    clock: the event comes when that clock reaches ``not_before``, after the trigger slept to it."""
    _cluster(zk, [3, 2], [2, 3])
    clock = ManualClock()
    not_before = clock.time() + 1.0
    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, clock.time() + 30, _book(tmp_path), poll_interval=0.1,
                              not_before=not_before)
    trigger.clock = clock
    event = _first_event(trigger)
    assert event["status"] == "done" and clock.time() >= not_before
    assert clock.slept[0] == pytest.approx(1.0)       # held back from the first poll, which saw it done
    # without not_before the same finished wave fires at the first poll, nothing slept
    eager = WaveDoneTrigger(zk_conn_id, "r", 0, clock.time() + 30, _book(tmp_path), poll_interval=0.1)
    eager.clock = ManualClock()
    assert _first_event(eager)["status"] == "done" and eager.clock.slept == []


def test_a_wave_goes_pending_submitted_done_and_done_is_final() -> None:
    from kafka_zk.errors import InvalidPayload

    wave = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1),))
    submitted = wave.advance("submitted", 10.0)
    assert submitted.submitted_at == 10.0 and submitted.advance("submitted", 20.0).submitted_at == 10.0
    done = submitted.advance("done", 30.0)
    assert done.done_at == 30.0 and wave.advance("done", 5.0).status == "done"
    with pytest.raises(InvalidPayload, match="done -> submitted is not allowed"):
        done.advance("submitted", 40.0)


def test_a_session_expiry_of_the_triggers_client_does_not_fail_the_wait(zk: KazooClient, zk_conn_id: str,
                                                                        tmp_path: Path, zk_server) -> None:
    """Issue 12 finding 2: before the fix the first error after the expiry ended the wait ("error")."""
    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1])
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"orders","partition":0,'
                                            b'"replicas":[3,2]}]}', makepath=True)
    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 60, _book(tmp_path), poll_interval=0.2,
                              zk_outage_s=30)

    async def go():
        runner = trigger.run()
        task = asyncio.ensure_future(anext(runner))
        while trigger._hook is None:              # the first poll built the client
            await asyncio.sleep(0.05)
        client = await asyncio.to_thread(trigger._client)
        session_id, password = client.client_id
        # a second client on the same session closes it: the trigger's session is expired
        thief = KazooClient(hosts=zk_server.connect_string, client_id=(session_id, password), timeout=10)
        await asyncio.to_thread(thief.start, 10)
        await asyncio.to_thread(thief.stop)
        await asyncio.to_thread(thief.close)
        await asyncio.sleep(1.0)
        # the controller finishes the partition
        zk.set("/brokers/topics/orders", json.dumps({"version": 2, "partitions": {"0": [3, 2]}}).encode())
        zk.set("/brokers/topics/orders/partitions/0/state", json.dumps(
            {"controller_epoch": 1, "leader": 3, "version": 1, "leader_epoch": 1, "isr": [3, 2]}).encode())
        zk.delete("/admin/reassign_partitions")
        event = await asyncio.wait_for(task, timeout=60)
        return event, session_id
    event, old_session = asyncio.run(go())
    assert event.payload["status"] == "done", event.payload


def test_a_zookeeper_outage_past_the_bound_is_reported_with_its_real_cause(zk_conn_id: str, tmp_path: Path,
                                                                          monkeypatch) -> None:
    from kazoo.exceptions import ConnectionLoss

    from kafka_zk.errors import ZkUnavailable

    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 60, _book(tmp_path), poll_interval=0.1,
                              zk_outage_s=0.5)

    def lost():
        try:
            raise ConnectionLoss()
        except ConnectionLoss as exc:
            raise ZkUnavailable("[/brokers/ids/1] ZooKeeper did not answer: ConnectionLoss") from exc
    monkeypatch.setattr(trigger, "_poll", lost)
    event = _first_event(trigger)
    assert event["status"] == "error" and "ZooKeeper unreachable for" in event["message"]
    assert "last error: ConnectionLoss" in event["message"] and "/brokers/ids/1" not in event["message"]


def test_one_session_expired_error_is_retried_not_final(zk: KazooClient, zk_conn_id: str, tmp_path: Path,
                                                        monkeypatch) -> None:
    """Before the fix a kazoo error escaped run() (and ZkUnavailable ended the wait as "error")."""
    from kazoo.exceptions import SessionExpiredError

    _cluster(zk, [3, 2], [2, 3])
    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 30, _book(tmp_path), poll_interval=0.1,
                              zk_outage_s=20)
    real_poll, calls = trigger._poll, []

    def expired_once():
        calls.append(1)
        if len(calls) == 1:
            raise SessionExpiredError()
        return real_poll()
    monkeypatch.setattr(trigger, "_poll", expired_once)
    event = _first_event(trigger)
    assert event["status"] == "done" and len(calls) == 2
    from procedures.reports.history import history_lines     # the outcome's history names the outage ridden out
    from procedures.run_folder import RunFolder

    [line] = history_lines(RunFolder(Path(trigger.run_dir)))
    assert line.startswith("ZooKeeper outage ridden out during wave 0 at ") and "the run went on" in line, line


def test_no_stall_is_judged_before_the_largest_partition_could_copy_at_the_throttle(
        zk: KazooClient, zk_conn_id: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 12 finding 4: a healthy copy showed no ISR change and was failed as "no progress
    for 15s". 1000 bytes at 500 B/s with no log sizes to read: no stall warning and no stall
    before 3 s (1.5 × 2 s) of the trigger's clock, even with a 0.3 s timeout."""
    _cluster(zk, [3, 2, 1], [1, 2], adding=[3], removing=[1])
    clock = ManualClock()
    started = clock.time()
    trigger = WaveDoneTrigger(zk_conn_id, "r", 0, clock.time() + 30, _book(tmp_path), poll_interval=0.1,
                              stall_warning_s=0.1, stall_timeout_s=0.3, throttle_bytes_per_s=500)
    trigger.clock = clock
    trigger._log = logging.getLogger("tests.wave_trigger")   # a stdlib logger caplog sees
    with caplog.at_level("INFO", logger="tests.wave_trigger"):
        event = _first_event(trigger)
    assert event["status"] == "stalled" and clock.time() - started >= 3.0
    assert sum(clock.slept) == pytest.approx(clock.time() - started)   # only polling moved the clock
    lines = [r.getMessage() for r in caplog.records]
    first_stall = next(i for i, line in enumerate(lines) if "stalled" in line or "no progress for" in line)
    polls_before = [line for line in lines[:first_stall] if line.startswith("wave 0:")]
    assert len(polls_before) >= 29     # 3 s of 0.1 s polls before anything was called stalled


def test_the_eta_is_never_zero_while_a_partition_still_moves() -> None:
    from procedures.waves.book import WaveProgress

    moving_unknown_size = WaveProgress(0, 0, 1, 0, 0, ("orders-0",))
    assert progress_line(moving_unknown_size, 0, 1, 10.0, 0).endswith("ETA unknown (from ISR joins)")
    assert progress_line(WaveProgress(0, 1, 1, 0, 0), 1, 1, 10.0, 0).endswith("ETA 0s (from ISR joins)")
    almost = WaveProgress(0, 0, 1, 10, 10_000, ("orders-0",), "follower log sizes")
    assert "ETA 1s" in progress_line(almost, 0, 1, 1.0, 9_990)        # 0.001 s left: never "0s"
