"""Replay of the recorded Kafka 2.4.1 trajectories (tests/vectors/real_kafka_2_4_1/, README there).

Expected: for every watched path (topic znodes, partition and state znodes of the watched
topics, their config and delete marker, the two admin nodes), the sequence of distinct states
implied by the recording's complete ``zk_writes`` applied in order to its first snapshot.
Normalised as the README says: state znodes compare (leader, leader_epoch, isr) — controller
epochs, zkVersions, timestamps and controller ids are incidental; JSON compares parsed.

Actual: the same paths after the emulator replayed the recording's ``action`` entries, from the
emulator's journal merged with the replay's own tool writes by time.

Order of the actions: the recording's causal order first, then its pace. Before each action
the replay waits (plain kazoo polls every ~20 ms, at most ``BARRIER_TIMEOUT`` wall seconds)
until ZooKeeper has reached the tree the recording shows just before it: the first snapshot
with the ``zk_writes`` committed before the action applied (:func:`barrier_sequences`: the
paths and normalisation of :func:`expected_sequences`, plus whether each broker is registered
and whether there is a controller). A path has reached its recorded state when it holds it or
a later one of its recorded sequence (a controller still reacting to the previous action may
be ahead of the recording, e.g. e-1's second marker written 8 ms after the first; the order of
states per path is what the test compares). So a reaction the recording saw before an action —
an election after a broker's session expired, a reassignment run after a controller bounce —
comes before it here too, however loaded the machine. Besides, an action comes no sooner after
the previous one than the recorded gap divided by the speed-up (a wait at a barrier delays the
later actions as well), so what runs on the emulator's clock meanwhile (a throttled copy, a
killed broker's session expiring as late as the recording saw it end) gets about the recorded
time, more only after a barrier wait. A barrier not reached in time is noted
(``Replayer.unmet``) and the action performed anyway: the comparisons below then report the
difference. An independent poller (plain kazoo, every ~20 ms, like the
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
from typing import Any, Callable, Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "real_kafka_2_4_1"
ABSENT = "ABSENT"
PRESENT = "PRESENT"
BARRIER_TIMEOUT = 30.0      # wall seconds an action waits for the recording's preceding tree


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


def _first_snapshot(vector: dict) -> dict[str, dict]:
    return next(e for e in vector["timeline"] if e["type"] == "snapshot")["nodes"]


def _recorded_changes(vector: dict, keep: Callable[[str], bool]) -> Iterator[tuple[int, str, Any]]:
    """Every change the recording's ``zk_writes`` made to a path ``keep`` accepts, in commit
    order: (index of the write, path, data as recorded or ABSENT). A multi with a failed op
    changed nothing; a closed session deleted its ephemerals."""
    for i, w in enumerate(vector["zk_writes"]):
        if w["op"] == "closeSession":
            ops = [{"op": "delete", "path": p} for p in w.get("ephemerals_deleted") or []]
        else:
            ops = w["ops"] if w["op"] == "multi" else [w]
        if any(o.get("op") == "error" for o in ops):
            continue
        for o in ops:
            path = o.get("path")
            if path is None or not keep(path):
                continue
            if o["op"] in ("create", "setData"):
                yield i, path, o.get("data")
            elif o["op"] == "delete":
                yield i, path, ABSENT


def _sequences(vector: dict, keep: Callable[[str], bool],
               value: Callable[[str, Any], Any]) -> dict[str, list[tuple[int, Any]]]:
    """The distinct successive values ``value(path, data)`` of each path ``keep`` accepts, from
    the recording's first snapshot through its ``zk_writes``: (index of the write that set it,
    -1 for the starting point; value)."""
    seqs = {p: [(-1, value(p, n["data"]))] for p, n in _first_snapshot(vector).items() if keep(p)}
    for i, path, data in _recorded_changes(vector, keep):
        seq = seqs.setdefault(path, [(-1, ABSENT)])
        v = value(path, data)
        if seq[-1][1] != v:
            seq.append((i, v))
    return seqs


def expected_sequences(vector: dict) -> dict[str, list]:
    topics = vector["watched_topics"]
    return {p: [v for _, v in seq]
            for p, seq in _sequences(vector, lambda p: relevant(p, topics), normalize).items()}


def _liveness(path: str) -> bool:
    """A broker registration or the controller: only their presence is compared."""
    return path == "/controller" or re.fullmatch(r"/brokers/ids/\d+", path) is not None


def barrier_sequences(vector: dict) -> dict[str, list[tuple[int, Any]]]:
    """:func:`expected_sequences` (same paths, same normalisation), each value with the index of
    the write that set it, plus PRESENT/ABSENT for each broker registration and the controller:
    what :meth:`Replayer.run` waits for, compared with :func:`read_barrier_tree`."""
    topics = vector["watched_topics"]
    return _sequences(vector, lambda p: relevant(p, topics) or _liveness(p),
                      lambda p, d: PRESENT if _liveness(p) and d is not ABSENT else normalize(p, d))


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


def read_barrier_tree(zk: KazooClient, topics: list[str]) -> dict[str, Any]:
    """:func:`read_tree` plus PRESENT for each registered broker and for the controller."""
    out = read_tree(zk, topics)
    out.update({f"/brokers/ids/{b}": PRESENT for b in zk.get_children("/brokers/ids")})
    if zk.exists("/controller") is not None:
        out["/controller"] = PRESENT
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
        # per path: its recorded states with the index of the write that set each, and how far
        # ZooKeeper has been seen to get along them (run())
        self.recorded = barrier_sequences(vector)
        self.pos = {p: 0 for p in self.recorded}
        # barriers not met within BARRIER_TIMEOUT: (t_rel, action, path or broker, {path: (recorded, held)})
        self.unmet: list[tuple[float, str, Any, dict]] = []

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
        writes = self.vector["zk_writes"]
        tool = [i for i, w in enumerate(writes) if w["session"] == "tool"]   # one per ZooKeeper action
        assert len(tool) == sum(a["action"] in ("create", "set", "delete") for a in actions), \
            "the recording's tool writes do not match its ZooKeeper actions one to one"
        done = 0                                   # ZooKeeper actions performed so far
        prev_t, prev_at = actions[0]["t_rel"], time.monotonic()
        self.started = prev_at
        for a in actions:
            # the writes committed before this action: earlier by server time, and never the
            # tool's own write for it or a later one (logged before sending, an action can
            # still carry a t_rel a millisecond after its write's)
            upto = next((i for i, w in enumerate(writes) if w["t_rel"] >= a["t_rel"]), len(writes))
            if done < len(tool):
                upto = min(upto, tool[done])
            delay = prev_at + (a["t_rel"] - prev_t) / self.speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._barrier(a, upto)
            prev_t, prev_at = a["t_rel"], time.monotonic()
            self._do(a)
            if a["action"] in ("create", "set", "delete"):
                self._performed(tool[done])
                done += 1

    def _barrier(self, a: dict, upto: int) -> None:
        """Wait until every path is at (or past) the state the recording shows once
        ``zk_writes[:upto]`` were committed; note it in ``unmet`` if that takes too long."""
        want = {p: max(j for j, (i, _) in enumerate(seq) if i < upto) for p, seq in self.recorded.items()}
        deadline = time.monotonic() + BARRIER_TIMEOUT
        while True:
            try:
                have = read_barrier_tree(self.zk, self.topics)
            except KazooException:                 # a read racing a deletion, a lost connection: again
                have = None
            if have is not None:
                self._observe(have)
            behind = {p: (self.recorded[p][k][1], (have or {}).get(p, ABSENT))
                      for p, k in want.items() if self.pos[p] < k}
            if not behind:
                return
            if time.monotonic() >= deadline:
                self.unmet.append((a["t_rel"], a["action"], a.get("path") or a.get("broker"), behind))
                return
            time.sleep(0.02)

    def _observe(self, have: dict[str, Any]) -> None:
        """Move each path on to the first recorded state, from where it is, that ZooKeeper holds
        (the first: a value can come back, e.g. ABSENT; a value the recording never had moves
        nothing)."""
        for p, seq in self.recorded.items():
            live = have.get(p, ABSENT)
            self.pos[p] = next((j for j in range(self.pos[p], len(seq)) if seq[j][1] == live), self.pos[p])

    def _performed(self, index: int) -> None:
        """The replay just made the recording's write ``index`` (the tool's): the paths it set are
        at least there, even if the controller changes them again before the next poll."""
        for p, seq in self.recorded.items():
            for j, (i, _) in enumerate(seq):
                if i == index:
                    self.pos[p] = max(self.pos[p], j)

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
