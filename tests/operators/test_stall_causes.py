"""Stalls named with their cause: pure cases on literal snapshots, and the emulator's append
failure (a follower failing every fetch after max.message.bytes was lowered, issue 11) seen by
the wave trigger on a real ZooKeeper."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition
from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
from procedures.run_folder import RunFolder
from procedures.waves.stall_causes import stall_causes
from operators.triggers.reassignment import WaveDoneTrigger
from procedures.waves.book import WaveBook, WaveMove, WaveSpec
from tests.zk_helpers import set_config_by_hand

TP = TopicPartition("big", 0)
WAVE = WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=10 * 1024 ** 2),), status="submitted")


def _snap(brokers=(1, 2, 3), topics=True, config=None) -> ClusterSnapshot:
    part = Partition("big", 0, (3, 2, 1), adding=(3,), removing=(1,), leader=2, leader_epoch=1, isr=(1, 2),
                     controller_epoch=1)
    tops = {"big": Topic("big", {0: part}, config=config or {})} if topics else {}
    return ClusterSnapshot({b: Broker(b, None, "127.0.0.1", 9092) for b in brokers}, tops)


def test_a_deleted_topic_is_a_dead_end() -> None:
    (cause,) = stall_causes(_snap(topics=False), WAVE)
    assert cause.dead_end and "topic big was deleted while its partition moved" in str(cause)


def test_an_unregistered_destination_is_named() -> None:
    (cause,) = stall_causes(_snap(brokers=(1, 2)), WAVE)
    assert not cause.dead_end and "big-0: destination broker(s) [3] not registered" in str(cause)


def test_a_follower_up_but_out_of_the_isr_is_a_fetch_failure_and_a_low_max_message_bytes_is_named() -> None:
    (plain,) = stall_causes(_snap(), WAVE)
    assert "broker(s) [3] up but not in the ISR" in str(plain) and "server.log" in str(plain)
    assert "max.message.bytes" not in str(plain)
    (low,) = stall_causes(_snap(config={"max.message.bytes": "1024"}), WAVE)
    assert "max.message.bytes=1024, below the brokers' message.max.bytes=1000012" in str(low)
    assert "RecordTooLargeException" in str(low)


def test_the_emulators_append_failure_stalls_the_wave_with_its_cause(zk_connect: str, zk: KazooClient,
                                                                      zk_conn_id: str, tmp_path: Path) -> None:
    cluster = EmulatedCluster(zk_connect, ClusterSpec(brokers={1: None, 2: None, 3: None}, speed=1000.0,
                                                      seed=0)).start()
    try:
        cluster.create_topics({"big": ({0: [1, 2]}, {0: 10 * 1024 ** 2}, None)})
        set_config_by_hand(zk, "topics/big", {"max.message.bytes": "1024"})   # lowered after the data
        cluster.fail_append("big", 0, 3)
        zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
            {"topic": "big", "partition": 0, "replicas": [3, 2]}]}).encode(), makepath=True)
        folder = RunFolder(tmp_path / "run").ensure()
        WaveBook("h" * 64, (WAVE,)).save(folder.wave_progress)
        trigger = WaveDoneTrigger(zk_conn_id, "r", 0, time.time() + 60, str(folder.root), poll_interval=0.2,
                                  stall_warning_s=0.5, stall_timeout_s=2.0)
        event = asyncio.run(asyncio.wait_for(anext(trigger.run()), timeout=60)).payload
        assert event["status"] == "stalled" and event["pending"] == ["big-0"]
        assert "big-0: follower(s) on broker(s) [3] up but not in the ISR" in event["message"]
        assert "max.message.bytes=1024" in event["message"]
        assert any(e.kind == "append_failed" and e.broker == 3 for e in cluster.history())
        cluster.fail_append("big", 0, 3, failing=False)   # raised back: the move finishes
        assert cluster.wait_until(lambda: zk.exists("/admin/reassign_partitions") is None, 60)
    finally:
        cluster.stop()
