"""Replay of the recorded Kafka 2.4.1 trajectories (tests/vectors/real_kafka_2_4_1/, README there).

Expected: for every watched path (topic znodes, partition and state znodes of the watched
topics, their config and delete marker, the two admin nodes), the sequence of distinct states
implied by the recording's complete ``zk_writes`` applied in order to its first snapshot.
Normalised as the README says: state znodes compare (leader, leader_epoch, isr) — controller
epochs, zkVersions, timestamps and controller ids are incidental; JSON compares parsed.

Actual: the same paths after the emulator replayed the recording's ``action`` entries (at the
recording's pace divided by the speed-up; a killed or stopped broker's session ends as late as
the recording saw it end), from the emulator's journal merged with the
replay's own tool writes by time. An independent poller (plain kazoo, every ~20 ms, like the
original recorder) checks that every state it saw is in that sequence, in order, so the
journal cannot claim what ZooKeeper did not hold; the final ZooKeeper content must equal the
last state of each sequence.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "real_kafka_2_4_1"
ABSENT = "ABSENT"


def load(name: str) -> dict:
    return json.loads((VECTORS / f"{name}.json").read_text())


def relevant(path: str, topics: list[str]) -> bool:
    if path in ("/admin/reassign_partitions", "/admin/preferred_replica_election"):
        return True
    for t in topics:
        if path in (f"/brokers/topics/{t}", f"/config/topics/{t}", f"/admin/delete_topics/{t}"):
            return True
        if re.fullmatch(rf"/brokers/topics/{re.escape(t)}/partitions/\d+(/state)?", path):
            return True
    return False


def normalize(path: str, data: Any) -> Any:
    if data is ABSENT:
        return ABSENT
    if isinstance(data, (bytes, str)) and data not in (b"", ""):
        try:
            data = json.loads(data)
        except ValueError:
            data = data.decode() if isinstance(data, bytes) else data
    if data in (b"", ""):
        data = None
    if path.endswith("/state") and isinstance(data, dict):
        return ("state", data["leader"], data["leader_epoch"], tuple(data["isr"]))
    return json.dumps(data, sort_keys=True)


def _push(seqs: dict[str, list], path: str, value: Any) -> None:
    seq = seqs.setdefault(path, [ABSENT])
    if seq[-1] != value:
        seq.append(value)


def expected_sequences(vector: dict) -> dict[str, list]:
    topics = vector["watched_topics"]
    first = next(e for e in vector["timeline"] if e["type"] == "snapshot")["nodes"]
    seqs: dict[str, list] = {}
    for path, node in first.items():
        if relevant(path, topics):
            seqs[path] = [normalize(path, node["data"])]
    for w in vector["zk_writes"]:
        ops = w["ops"] if w["op"] == "multi" else [w]
        if any(o.get("op") == "error" for o in ops):
            continue
        for o in ops:
            path = o.get("path")
            if path is None or not relevant(path, topics):
                continue
            if o["op"] in ("create", "setData"):
                _push(seqs, path, normalize(path, o.get("data")))
            elif o["op"] == "delete":
                _push(seqs, path, ABSENT)
    return seqs


def read_tree(zk: KazooClient, topics: list[str]) -> dict[str, Any]:
    """Current normalised value of every relevant path that exists."""
    out = {}
    paths = ["/admin/reassign_partitions", "/admin/preferred_replica_election"]
    for t in topics:
        paths += [f"/brokers/topics/{t}", f"/config/topics/{t}", f"/admin/delete_topics/{t}"]
        try:
            for p in zk.get_children(f"/brokers/topics/{t}/partitions"):
                paths += [f"/brokers/topics/{t}/partitions/{p}", f"/brokers/topics/{t}/partitions/{p}/state"]
        except NoNodeError:
            pass
    for path in paths:
        try:
            out[path] = normalize(path, zk.get(path)[0])
        except NoNodeError:
            continue
    return out


@dataclass
class Poller:
    """Independent observer: distinct states per path, polled with plain kazoo."""

    zk: KazooClient
    topics: list[str]
    seqs: dict[str, list] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> "Poller":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                tree = read_tree(self.zk, self.topics)
            except Exception:  # noqa: BLE001 - a poll racing a deletion; the next one counts
                continue
            if first:
                self.seqs = {p: [v] for p, v in tree.items()}
                first = False
            for path in set(tree) | set(self.seqs):
                _push(self.seqs, path, tree.get(path, ABSENT))
            time.sleep(0.02)

    def stop(self) -> dict[str, list]:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.seqs


def is_subsequence(small: list, big: list) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


class Replayer:
    """Drives a cluster through a vector's actions with plain kazoo writes (as its tool did)."""

    def __init__(self, cluster, zk: KazooClient, vector: dict, speed: float) -> None:
        self.cluster, self.zk, self.vector, self.speed = cluster, zk, vector, speed
        self.topics = vector["watched_topics"]
        self.tool_writes: list[tuple[float, str, str, Any]] = []

    def setup(self, sizes: dict[tuple[str, int], int] | None = None) -> dict[str, Any]:
        first = next(e for e in self.vector["timeline"] if e["type"] == "snapshot")["nodes"]
        roles = self.vector.get("roles") or {}
        ctrl = roles.get("controller")
        if ctrl is None and "/controller" in first:
            ctrl = first["/controller"]["data"]["brokerid"]
        if ctrl is not None:
            self.cluster.move_controller(ctrl)
        for path, node in sorted(first.items()):
            if path.startswith("/config/brokers/") and node["data"]["config"]:
                self.zk.create(path, json.dumps(node["data"]).encode(), makepath=True)
                entity = path[len("/config/"):]
                self.zk.create("/config/changes/config_change_",
                               json.dumps({"version": 2, "entity_path": entity}).encode(), sequence=True)
        for t in self.topics:
            node = first.get(f"/brokers/topics/{t}")
            if node is None:
                continue
            assignment = {int(p): r for p, r in node["data"]["partitions"].items()}
            cfg = first.get(f"/config/topics/{t}", {"data": {"config": {}}})["data"]["config"]
            self.cluster.create_topic(t, assignment, {p: n for (tt, p), n in (sizes or {}).items() if tt == t},
                                      cfg or None)
        assert self.cluster.wait_idle(30)
        return {p: normalize(p, n["data"]) for p, n in first.items() if relevant(p, self.topics)}

    def run(self) -> None:
        actions = [e for e in self.vector["timeline"] if e["type"] == "action"]
        if not actions:
            return
        t0, start = actions[0]["t_rel"], time.monotonic()
        self.started = start
        for a in actions:
            delay = start + (a["t_rel"] - t0) / self.speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._do(a)

    def _do(self, a: dict) -> None:
        kind, path = a["action"], a.get("path")
        data = a.get("data")
        payload = b"" if data is None else (data.encode() if isinstance(data, str) else json.dumps(data).encode())
        t = time.monotonic()
        if kind == "create":
            created = self.zk.create(path, payload, sequence=bool(a.get("sequence")), makepath=True)
            self.tool_writes.append((t, "create", created, payload))
        elif kind == "set":
            self.zk.set(path, payload)
            self.tool_writes.append((t, "set", path, payload))
        elif kind == "delete":
            self.zk.delete(path)
            self.tool_writes.append((t, "delete", path, None))
        elif kind.startswith("stop broker"):
            self.cluster.shutdown_broker(a["broker"], close_after=self._session_end(a))
        elif kind.startswith("kill -9"):
            self.cluster.kill_broker(a["broker"], expire_after=self._session_end(a))
        elif kind == "start broker":
            self.cluster.restart_broker(a["broker"])
        else:
            raise AssertionError(f"unknown action {kind!r}")

    def _session_end(self, a: dict) -> float:
        """Seconds from a stop/kill action until the recording saw that broker's session end."""
        for w in self.vector["zk_writes"]:
            if w["op"] == "closeSession" and w["session"] == f"broker {a['broker']}" and w["t_rel"] > a["t_rel"]:
                return w["t_rel"] - a["t_rel"]
        return 0.0

    def actual_sequences(self, initial: dict[str, Any]) -> dict[str, list]:
        seqs = {p: [v] for p, v in initial.items()}
        writes = [(t, op, path, data) for t, op, path, data in self.tool_writes]
        writes += [(w.t, w.op, w.path, w.data) for w in self.cluster.journal()
                   if w.t >= self.started and w.writer != "tool"]
        for _, op, path, data in sorted(writes, key=lambda w: w[0]):
            if relevant(path, self.topics):
                _push(seqs, path, ABSENT if op == "delete" else normalize(path, data))
        return seqs
