"""Deleting /controller is advised only on evidence (issue 38): the same controller epoch, its
session alive, the wave's node unstarted for longer than a bound — never on one slow first check.

The pure watch is pinned on literal observations; the trigger on a real ZooKeeper where the test
plays a 2.4 controller by hand (registrations, /controller, /controller_epoch, the topic and state
znodes), on a :class:`ManualClock` whose time moves only as the trigger sleeps, so "slow" and
"stopped" are simulated seconds, never wall time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Callable

import pytest
from kazoo.client import KazooClient

from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from procedures.waves.controller_evidence import ControllerWatch
from procedures.waves.stall_causes import CONTROLLER, StallCause
from procedures.waves.book import WaveBook, WaveMove, WaveSpec
from operators.triggers.clock import ManualClock
from operators.triggers.reassignment import WaveDoneTrigger
from tests.zk_helpers import create_topic_by_hand, register_brokers

TP = TopicPartition("big", 0)
IDLE = StallCause("big-0", "the controller (broker 1) has not started /admin/reassign_partitions", True, CONTROLLER)


def test_one_poll_is_no_evidence_and_a_new_epoch_starts_the_count_again() -> None:
    watch = ControllerWatch().observe(IDLE, 1, 5, now=0.0)
    assert watch.verdict(IDLE, now=0.0, bound_s=60) is None
    watch = watch.observe(IDLE, 1, 5, now=59.0)
    assert watch.verdict(IDLE, now=59.0, bound_s=60) is None          # under the bound
    watch = watch.observe(IDLE, 1, 6, now=61.0)                        # a new controller epoch
    assert watch.since == 61.0 and watch.polls == 1
    assert watch.observe(IDLE, 1, 6, now=120.0).verdict(IDLE, now=120.0, bound_s=60) is None   # 59 s of epoch 6
    evidenced = watch.observe(IDLE, 1, 6, now=121.0)
    verdict = evidenced.verdict(IDLE, now=121.0, bound_s=60)
    assert verdict is not None and verdict.dead_end and verdict.kind == CONTROLLER
    assert "controller epoch 6" in verdict.cause and "for 60s over 2 poll(s)" in verdict.cause
    assert "session alive" in verdict.cause and "delete /controller" in verdict.cause
    assert evidenced.observe(None, 1, 6, now=122.0) == ControllerWatch()   # acting again: nothing kept


def test_an_absent_controller_is_named_as_such() -> None:
    watch = ControllerWatch().observe(IDLE, None, 5, 0.0).observe(IDLE, None, 5, 90.0)
    verdict = watch.verdict(IDLE, 90.0, 60)
    assert verdict is not None and "/controller has been absent for 90s" in verdict.cause


class ScriptedClock(ManualClock):
    """A ManualClock that runs ``action`` once its time reaches ``at`` (the hand-played controller)."""

    def __init__(self, start: float, at: float, action: Callable[[], None]) -> None:
        super().__init__(start)
        self.at, self.action, self.done = at, action, False

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        if not self.done and self.now >= self.at:
            self.done = True
            await asyncio.to_thread(self.action)


def _cluster(zk: KazooClient) -> None:
    """Brokers 1-3, broker 1 controller at epoch 5, big-0 on [1, 2], and our node moving it to [3, 2]."""
    register_brokers(zk, {1: None, 2: None, 3: None})
    zk.create("/controller", json.dumps({"version": 1, "brokerid": 1, "timestamp": "1600000000000"}).encode(),
              ephemeral=True)
    zk.create("/controller_epoch", b"5")
    create_topic_by_hand(zk, "big", {0: [1, 2]})
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "big", "partition": 0, "replicas": [3, 2]}]}).encode(), makepath=True)


def _finish_move(zk: KazooClient) -> None:
    """What the controller does once it acts (the end state of a 2.4 reassignment)."""
    zk.set("/brokers/topics/big", json.dumps({"version": 2, "partitions": {"0": [3, 2]},
                                              "adding_replicas": {}, "removing_replicas": {}}).encode())
    zk.set("/brokers/topics/big/partitions/0/state", json.dumps({
        "controller_epoch": 5, "leader": 3, "version": 1, "leader_epoch": 1, "isr": [3, 2]}).encode())
    zk.delete("/admin/reassign_partitions")


def _trigger(monkeypatch, zk_server, zk_chroot: str, tmp_path: Path, clock: ManualClock) -> WaveDoneTrigger:
    conn_id = f"zk_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
        "extra": {"chroot": zk_chroot, "connect_timeout": 5, "session_timeout": 10}}))
    folder = RunFolder(tmp_path / "run").ensure()
    WaveBook("h" * 64, (WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1024),), status="submitted"),)
             ).save(folder.wave_progress)
    trigger = WaveDoneTrigger(conn_id, "r", 0, clock.time() + 3600, str(folder.root), poll_interval=2.0)
    trigger.clock = clock
    return trigger


def _run(trigger: WaveDoneTrigger, caplog: pytest.LogCaptureFixture) -> tuple[dict, list[str]]:
    name = f"tests.evidence.{uuid.uuid4().hex[:6]}"
    trigger._log = logging.getLogger(name)

    async def first() -> dict:
        events = trigger.run()
        try:
            return (await anext(events)).payload
        finally:
            await events.aclose()
    with caplog.at_level("INFO", logger=name):
        event = asyncio.run(asyncio.wait_for(first(), timeout=300))
    return event, [r.getMessage() for r in caplog.records if r.name == name]


def test_a_slow_controller_under_the_bound_is_never_told_to_move(
        zk_server, zk_chroot: str, zk: KazooClient, tmp_path: Path, monkeypatch, caplog) -> None:
    """The controller starts and finishes the node 45 simulated seconds after it was written (a
    busy controller): the wave ends done, and no log line, notification or event advises deleting
    /controller; the log says what it saw (the controller, its epoch, for how long)."""
    _cluster(zk)
    start = time.time()
    clock = ScriptedClock(start, start + 45, lambda: _finish_move(zk))
    event, lines = _run(_trigger(monkeypatch, zk_server, zk_chroot, tmp_path, clock), caplog)
    assert event["status"] == "done", event
    assert not any("delete /controller" in line for line in lines), lines
    assert "delete /controller" not in json.dumps(event)
    waiting = [line for line in lines if "unstarted" in line]
    assert waiting and "broker 1, controller epoch 5" in waiting[-1] and "waiting" in waiting[-1]
    assert not (tmp_path / "run" / "notifications.jsonl").exists()     # no "blocked" notice for a slow controller


def test_a_controller_that_stopped_acting_is_named_with_the_evidence(
        zk_server, zk_chroot: str, zk: KazooClient, tmp_path: Path, monkeypatch, caplog) -> None:
    """The same controller leaves the node unstarted; at 30 s a new epoch is seen (a controller
    election by someone) and the count starts again: the advice comes only 60 s after that, naming
    the epoch, the time and the polls, and the wait ends ``dead_end_s`` later as before."""
    _cluster(zk)
    start = time.time()
    clock = ScriptedClock(start, start + 30, lambda: zk.set("/controller_epoch", b"6"))
    trigger = _trigger(monkeypatch, zk_server, zk_chroot, tmp_path, clock)
    trigger.dead_end_s = 120.0
    event, lines = _run(trigger, caplog)
    assert event["status"] == "stalled" and event["dead_end"] is True, event
    assert "controller epoch 6" in event["message"] and "session alive" in event["message"]
    assert "delete /controller" in event["message"]
    advised = [i for i, line in enumerate(lines) if "delete /controller" in line]
    assert advised, lines
    first = lines[advised[0]]
    assert "controller epoch 6" in first                      # never advised on epoch 5's 30 s
    seconds = float(first.split("unstarted for ")[1].split("s over")[0])
    assert seconds >= 60
    assert clock.now - start >= 30 + 60 + 120                 # evidence bound, then dead_end_s
    assert (tmp_path / "run" / "notifications.jsonl").exists()   # the "blocked" notice, once evidenced
