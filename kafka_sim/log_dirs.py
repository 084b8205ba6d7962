"""Partition sizes as ``kafka-log-dirs.sh --describe`` prints them, and their publication.

:func:`render` builds the exact JSON line the tool prints (2.4):
``{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/var/lib/kafka/data","error":null,
"partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}`` — live
brokers only (the tool can only ask live brokers), one log dir each, partitions sorted. Sizes are
bytes on that replica: the leader's log for the leader and in-sync followers, the copied bytes
for a follower catching up; its ``offsetLag`` is the bytes it is behind (the emulator counts one
offset per byte), 0 otherwise.

Sizes live in the emulator process. So that another process (``kafka-runbook sim log-dirs``)
can read them, :func:`publish` writes the JSON, zlib-compressed and split into chunks under the
emulator-only path ``/kafka-sim/log-dirs`` (``chunk-0000``…, the parent holding a small JSON
header with the wall-clock time ``at`` of the publication); the format and its reader,
:func:`kafka_zk.log_dirs.read_published_log_dirs` (with that time, so a reader can tell stale
sizes), belong to the contract layer, where the production log-dirs source reads it. A
cluster whose spec sets ``log_dirs_every_s`` republishes on its own at that rhythm (what a
rehearsal's wave progress reads, as a real deployment runs ``kafka-log-dirs``). No Kafka
component reads ``/kafka-sim``.

Failure: :func:`publish` raises kazoo's errors when ZooKeeper refuses a write.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Mapping

from kazoo.client import KazooClient

from kafka_sim import zk_io
from kafka_sim.replication import ReplicationModel

CHUNK = 900 * 1024


def render(model: ReplicationModel, live: list[int], log_dir: str) -> str:
    per_broker: Mapping[int, list] = {b: [] for b in live}
    for tp in sorted(model.parts):
        pd = model.parts[tp]
        size = int(model.size(tp))
        for r in pd.replicas:
            if r not in per_broker:
                continue
            have = int(model.replica_bytes(tp, r)) if r in pd.have else size
            per_broker[r].append({"partition": f"{tp.topic}-{tp.partition}", "size": have,
                                  "offsetLag": max(0, size - have), "isFuture": False})
    doc = {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": log_dir, "error": None, "partitions": per_broker[b]}]}
        for b in sorted(per_broker)]}
    return json.dumps(doc, separators=(",", ":"))


def publish(client: KazooClient, text: str, sim_time: float) -> None:
    blob = zlib.compress(text.encode("utf-8"), 6)
    chunks = [blob[i:i + CHUNK] for i in range(0, len(blob), CHUNK)] or [b""]
    header = json.dumps({"version": 1, "encoding": "zlib", "chunks": len(chunks),
                         "sim_time": round(sim_time, 3), "at": round(time.time(), 3)}).encode("utf-8")
    zk_io.publish_chunks(client, zk_io.SIM_LOG_DIRS, header, chunks)
