"""SnapshotOperator: read the cluster once and keep that snapshot in the run folder.

The snapshot is what the plan is made from and what the report's "before" shows. A run that is
cleared and re-run keeps the snapshot it already has (re-reading mid-execution would describe a
half-moved cluster); guards compare the plan against the *live* cluster before any write.
An optional ``sizes_file`` (what ``kafka-log-dirs.sh --describe`` prints, or a ``sizes.jsonl``
made from it) is converted into ``sizes.jsonl`` in the run folder: one line per partition,
reduced as :mod:`kafka_zk.log_dirs` defines a partition's size, which the plan step's Spark job
reads in parallel (the tool's output is one JSON line that only one Spark task could parse).
The file as given is also copied to ``sizes.json``, so the plan can be reproduced from it.
Broker disk capacity (a ``capacity_file`` Param — Cruise Control's capacity JSON or the native
form — else the connection's ``extra.broker_capacity_bytes``) is checked and written as
``capacity.json`` with the run's ``disk_threshold_pct``; with neither, no file, and the plan
report says "capacity unknown".

Failure: an unreachable ZooKeeper raises :class:`ZkUnavailable`; a sizes file that is missing raises
:class:`InvalidInput`, one in neither form :class:`InvalidPayload`, naming the file (and nothing
about sizes is written); a removed broker that is not registered is refused later by the plan
and the guards, not here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from airflow.sdk import BaseOperator

from kafka_zk.capacity import DiskCapacity, read_capacity_file, write_capacity
from kafka_zk.errors import InvalidInput
from formats.sizes_file import convert_sizes
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import load_snapshot, write_snapshot
from operators.hooks.zookeeper import ZooKeeperHook
from procedures.plan.retiring import note_retiring
from operators.runtime import run_folder


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` through a temporary file in ``dst``'s folder (no half-copied file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class SnapshotOperator(BaseOperator):
    """Write ``snapshot.jsonl`` (and ``sizes.jsonl``, ``sizes.json``) into the run folder; return a summary."""

    template_fields: Sequence[str] = ("zk_conn_id", "run_root", "sizes_file", "capacity_file", "disk_threshold_pct")
    ui_color = "#e8f4fd"

    def __init__(self, *, zk_conn_id: str, run_root: str, sizes_file: str | None = None,
                 capacity_file: str | None = None, disk_threshold_pct: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self.run_root = run_root
        self.sizes_file = sizes_file
        self.capacity_file = capacity_file
        self.disk_threshold_pct = disk_threshold_pct

    def _capacity(self) -> DiskCapacity | None:
        """The run's disk capacity, checked (refused with the fix before anything is written)."""
        pct = None if self.disk_threshold_pct in (None, "", "None") else self.disk_threshold_pct
        if self.capacity_file not in (None, "", "None"):
            return read_capacity_file(str(self.capacity_file), pct)
        return ZooKeeperHook(self.zk_conn_id).broker_capacity(pct)

    def execute(self, context: Any) -> dict:
        folder = run_folder(context, self.run_root)
        capacity = self._capacity()
        if capacity is not None:
            write_capacity(str(folder.capacity), capacity)
            self.log.info("disk capacity of %d broker(s)%s, threshold %g %%, written to %s", len(capacity.brokers),
                          " and a default" if capacity.default else "", capacity.threshold_pct, folder.capacity)
        else:
            self.log.info("no disk capacity given (capacity_file / extra.broker_capacity_bytes): "
                          "the plan cannot check disk usage and its report says so")
        if self.sizes_file:
            src = Path(self.sizes_file)
            if not src.is_file():
                raise InvalidInput(f"sizes_file {src} does not exist: give the output of "
                                   "kafka-log-dirs.sh --describe, or leave sizes_file empty")
            started = time.monotonic()
            count = convert_sizes(str(src), str(folder.partition_sizes))  # checks it all before writing
            copy_atomic(src, folder.sizes)
            self.log.info("sizes of %d partitions from %s written to %s in %.1f s", count, src,
                          folder.partition_sizes, time.monotonic() - started)
        if folder.snapshot.is_file():
            snap = load_snapshot(str(folder.snapshot))
            self.log.info("snapshot already in %s (run cleared or retried): keeping it", folder.root)
        else:
            with ZooKeeperHook(self.zk_conn_id) as hook:
                snap = read_snapshot(hook.get_conn())
            write_snapshot(snap, str(folder.snapshot))
        with ZooKeeperHook(self.zk_conn_id) as hook:     # what this run's plan must leave out
            retiring = note_retiring(folder, hook.get_conn(), self.run_root)["brokers"]
        if retiring:
            self.log.info("retiring brokers (excluded as destinations of this run's plan): %s", sorted(retiring))
        summary = {"brokers": list(snap.live_broker_ids), "topics": len(snap.topics),
                   "partitions": snap.partition_count, "run_folder": str(folder.root),
                   "reassignment_in_progress": snap.reassignment is not None}
        self.log.info("snapshot: %s", summary)
        return summary
