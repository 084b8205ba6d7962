"""The campaign's safety invariants, read with plain kazoo only (never the project's readers).

* :class:`ThrottleSampler` — *no wave ever ran unthrottled*: while a run goes on it samples
  ``/admin/reassign_partitions``; for every listed partition of a live topic, the topic's
  leader/follower throttled-replica lists must name the moving replicas (``p:b`` or ``*``) and
  those brokers must carry the matching rate. A sample counts as a violation only if the node
  is unchanged (same mzxid) after the configs were read (no race with the wave ending).
* :func:`no_replica_lost` — every partition keeps as many replicas as before, all on registered
  brokers, a leader among them and the whole replica list back in the ISR (the data present on
  each: a replica joins the ISR only once it has caught up); a deleted topic is exempt.
* :func:`no_half_written_node` — every node under the admin, config and topic trees parses and
  has the fields Kafka needs.
* :func:`throttles_restored` — the throttle keys anywhere equal the pre-run ones exactly.

Each returns a list of problems (empty: holds).
"""

from __future__ import annotations

import json
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

RATE = {"leader": "leader.replication.throttled.rate", "follower": "follower.replication.throttled.rate"}
LIST = {"leader": "leader.replication.throttled.replicas", "follower": "follower.replication.throttled.replicas"}


def read(zk: KazooClient, path: str):
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return json.loads(data) if data else None


def assignment(zk: KazooClient) -> dict[tuple[str, int], list[int]]:
    out = {}
    for topic in zk.get_children("/brokers/topics"):
        doc = read(zk, f"/brokers/topics/{topic}")
        if doc is None:
            continue
        for p, replicas in doc["partitions"].items():
            out[(topic, int(p))] = list(replicas)
    return out


def config(zk: KazooClient, entity_type: str, name: str) -> dict[str, str]:
    doc = read(zk, f"/config/{entity_type}/{name}")
    return dict(doc["config"]) if doc else {}


def throttle_configs(zk: KazooClient) -> dict[str, dict[str, str]]:
    out = {}
    for entity_type in ("topics", "brokers"):
        if zk.exists(f"/config/{entity_type}") is None:
            continue
        for name in zk.get_children(f"/config/{entity_type}"):
            found = {k: v for k, v in config(zk, entity_type, name).items() if "throttled" in k}
            if found:
                out[f"{entity_type}/{name}"] = found
    return out


def _listed(value: str | None, partition: int, broker: int) -> bool:
    if not value:
        return False
    if value.strip() == "*":
        return True
    return f"{partition}:{broker}" in {x.strip() for x in value.split(",")}


class ThrottleSampler(threading.Thread):
    """Samples, every ``period`` s, that each listed move is throttled (see the module doc)."""

    def __init__(self, zk: KazooClient, before: dict[tuple[str, int], list[int]], period: float = 0.05) -> None:
        super().__init__(daemon=True, name="throttle-sampler")
        self.zk, self.before, self.period = zk, before, period
        self.stop_event = threading.Event()
        self.samples = 0          # samples with a wave listed
        self.violations: list[str] = []
        self.last_listed: dict[tuple[str, int], float] = {}   # (topic, partition) → epoch s last seen listed

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._sample()
            except Exception:  # noqa: BLE001 - a node changing under the read: sample again
                pass
            time.sleep(self.period)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)

    def _sample(self) -> None:
        try:
            data, stat = self.zk.get("/admin/reassign_partitions")
        except NoNodeError:
            return
        doc = json.loads(data)
        found: list[tuple[str, str]] = []              # (topic, problem)
        now = time.time()
        for entry in doc.get("partitions", []):
            topic, p, target = entry["topic"], int(entry["partition"]), list(entry["replicas"])
            self.last_listed[(topic, p)] = now
            if self.zk.exists(f"/brokers/topics/{topic}") is None:
                continue                                   # deleted while it moved: nothing copies
            original = self.before.get((topic, p), [])
            adding = [b for b in target if b not in original]
            if not adding:
                continue
            tconf = config(self.zk, "topics", topic)
            for b in adding:
                if not _listed(tconf.get(LIST["follower"]), p, b):
                    found.append((topic, f"{topic}-{p}: follower {b} not in {LIST['follower']}"))
                elif RATE["follower"] not in config(self.zk, "brokers", str(b)):
                    found.append((topic, f"{topic}-{p}: broker {b} copies with no {RATE['follower']}"))
            for b in original:
                if not _listed(tconf.get(LIST["leader"]), p, b):
                    found.append((topic, f"{topic}-{p}: leader-side replica {b} not in {LIST['leader']}"))
                elif RATE["leader"] not in config(self.zk, "brokers", str(b)):
                    found.append((topic, f"{topic}-{p}: broker {b} serves with no {RATE['leader']}"))
        self.samples += 1
        if found:
            try:
                _, again = self.zk.get("/admin/reassign_partitions")
            except NoNodeError:
                return
            if again.mzxid != stat.mzxid:
                return
            # a topic deleted between its existence check and its config read (Kafka deletes the
            # topic znode, then /config/topics/<t>) had nothing copying: only topics still there count
            alive = {t for t in {t for t, _ in found} if self.zk.exists(f"/brokers/topics/{t}") is not None}
            self.violations.extend(problem for t, problem in found if t in alive)


def no_replica_lost(zk: KazooClient, before: dict[tuple[str, int], list[int]], deleted: set[str],
                    timeout: float = 60.0) -> list[str]:
    """Bounded wait (``timeout`` wall s) for every partition to be whole; the problems left."""
    deadline = time.monotonic() + timeout
    while True:
        problems = _replica_problems(zk, before, deleted)
        if not problems or time.monotonic() >= deadline:
            return problems
        time.sleep(0.25)


def _replica_problems(zk: KazooClient, before, deleted: set[str]) -> list[str]:
    problems = []
    live = {int(b) for b in zk.get_children("/brokers/ids")}
    after = assignment(zk)
    for tp, replicas in before.items():
        if tp[0] in deleted:
            continue
        now = after.get(tp)
        name = f"{tp[0]}-{tp[1]}"
        if now is None:
            problems.append(f"{name} disappeared")
            continue
        if len(set(now)) < len(replicas):
            problems.append(f"{name} has {now}, fewer than its {len(replicas)} replicas")
        if set(now) - live:
            problems.append(f"{name} has replicas on unregistered brokers {sorted(set(now) - live)}")
        state = read(zk, f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state")
        if state is None or state.get("leader") not in now:
            problems.append(f"{name}: leader {None if state is None else state.get('leader')} not in {now}")
        elif sorted(state.get("isr", [])) != sorted(now):
            problems.append(f"{name}: ISR {state.get('isr')} is not the whole replica list {now}")
    return problems


def _check_node(path: str, doc) -> str | None:
    if path == "/admin/reassign_partitions":
        ok = isinstance(doc, dict) and isinstance(doc.get("partitions"), list) and all(
            isinstance(e.get("topic"), str) and isinstance(e.get("partition"), int)
            and isinstance(e.get("replicas"), list) for e in doc["partitions"])
        return None if ok else "reassignment without topic/partition/replicas"
    if path.startswith("/config/") and path.count("/") == 3 and not path.startswith("/config/changes"):
        ok = isinstance(doc, dict) and isinstance(doc.get("config"), dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in doc["config"].items())
        return None if ok else "config without a string-to-string 'config'"
    if path.startswith("/config/changes/"):
        return None if isinstance(doc, dict) and "entity_path" in doc else "change notification without entity_path"
    if path.startswith("/brokers/topics/") and path.count("/") == 3:
        ok = isinstance(doc, dict) and isinstance(doc.get("partitions"), dict) and all(
            isinstance(r, list) and all(isinstance(b, int) for b in r) for r in doc["partitions"].values())
        return None if ok else "topic without partitions"
    if path.endswith("/state") and path.startswith("/brokers/topics/"):
        ok = isinstance(doc, dict) and isinstance(doc.get("leader"), int) and isinstance(doc.get("isr"), list)
        return None if ok else "partition state without leader/isr"
    if path == "/admin/preferred_replica_election":
        return None if isinstance(doc, dict) and isinstance(doc.get("partitions"), list) else "election without partitions"
    return None


def no_half_written_node(zk: KazooClient) -> list[str]:
    problems = []

    def walk(path: str) -> None:
        try:
            data, _ = zk.get(path)
            kids = zk.get_children(path)
        except NoNodeError:
            return
        if data:
            try:
                doc = json.loads(data)
            except ValueError as exc:
                problems.append(f"{path}: not JSON ({exc})")
            else:
                bad = _check_node(path, doc)
                if bad:
                    problems.append(f"{path}: {bad}")
        for k in kids:
            walk(f"{path.rstrip('/')}/{k}")

    for root in ("/admin", "/config", "/brokers/topics"):
        walk(root)
    return problems


def throttles_restored(zk: KazooClient, users: dict[str, dict[str, str]], deleted: set[str]) -> list[str]:
    now = throttle_configs(zk)
    want = {k: v for k, v in users.items() if not (k.startswith("topics/") and k.split("/", 1)[1] in deleted)}
    if now == want:
        return []
    return [f"throttles after the run {now} differ from the pre-run ones {want}"]
