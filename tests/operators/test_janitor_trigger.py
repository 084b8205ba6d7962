"""ReassignmentGoneTrigger on a real ZooKeeper: it fires only once no partition of the run is listed."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from operators.triggers.janitor import ReassignmentGoneTrigger, ours_in_flight
from procedures.waves.book import WaveBook, WaveMove, WaveSpec

TP = TopicPartition("orders", 0)


def _run_dir(tmp_path: Path) -> str:
    folder = RunFolder(tmp_path / "run").ensure()
    WaveBook("h" * 64, (WaveSpec(0, (WaveMove(TP, (1, 2), (3, 2), size=1000),), status="submitted",
                                 submitted_at=time.time()),)).save(folder.wave_progress)
    return str(folder.root)


def _first_event(trigger: ReassignmentGoneTrigger) -> dict:
    async def go():
        return await anext(trigger.run())
    return asyncio.run(asyncio.wait_for(go(), timeout=30)).payload


def test_serialize_pins_the_dotted_path_and_primitives() -> None:
    trigger = ReassignmentGoneTrigger("kz", "/runs/x", 1_900_000_000.0, 2.0)
    path, kwargs = trigger.serialize()
    assert path == "operators.triggers.janitor.ReassignmentGoneTrigger"
    assert ReassignmentGoneTrigger(**kwargs).serialize() == (path, kwargs)


def test_fires_when_our_partition_leaves_the_admin_node_not_before(zk: KazooClient, zk_conn_id: str,
                                                                    tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"orders","partition":0,'
                                            b'"replicas":[3,2]},{"topic":"other","partition":1,"replicas":[1]}]}',
              makepath=True)
    assert ours_in_flight(zk, run_dir) == ["orders-0"]
    released = threading.Event()

    def finish() -> None:   # the controller finishes ours; someone else's stays
        time.sleep(1.0)
        zk.set("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"other","partition":1,'
                                             b'"replicas":[1]}]}')
        released.set()
    threading.Thread(target=finish, daemon=True).start()
    event = _first_event(ReassignmentGoneTrigger(zk_conn_id, run_dir, time.time() + 30, poll_interval=0.1))
    assert event["status"] == "done" and released.is_set()


def test_times_out_naming_what_is_still_listed(zk: KazooClient, zk_conn_id: str, tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    zk.create("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"orders","partition":0,'
                                            b'"replicas":[3,2]}]}', makepath=True)
    event = _first_event(ReassignmentGoneTrigger(zk_conn_id, run_dir, time.time() + 0.5, poll_interval=0.1))
    assert event["status"] == "timeout" and event["listed"] == ["orders-0"]
