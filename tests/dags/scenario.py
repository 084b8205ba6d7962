"""The emulated cluster the DAG end-to-end tests decommission, and plain-kazoo views of it.

Six brokers in three racks; three topics with literal assignments and sizes, so every cluster
built here has the same layout and a plan made on one applies to another (tests that do not need
Spark reuse the plan of the Spark run). Broker 6 is removed. Final state is read back with plain
kazoo (never with our own code): replicas, leaders, ISRs, configs and admin znodes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.codecs import TopicPartition

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
REMOVED = [6]
GB = 1024 ** 3
TOPICS = {
    "orders": ({0: [6, 1, 2], 1: [2, 6, 4], 2: [3, 4, 6], 3: [6, 5, 1], 4: [1, 2, 3], 5: [4, 5, 6]},
               {0: 40 * GB, 1: 30 * GB, 2: 20 * GB, 3: 35 * GB, 4: 10 * GB, 5: 25 * GB}),
    "payments": ({0: [6, 4], 1: [5, 6], 2: [1, 2], 3: [6, 3]},
                 {0: 30 * GB, 1: 20 * GB, 2: 5 * GB, 3: 15 * GB}),
    "events": ({0: [1, 5, 6], 1: [6, 2, 4], 2: [3, 1, 5], 3: [2, 6, 1]},
               {0: 25 * GB, 1: 20 * GB, 2: 5 * GB, 3: 30 * GB}),
}
THROTTLE = 40 * 1024 ** 2

@dataclass
class Env:
    """An emulated cluster for a DAG test: its Airflow connection id, a plain kazoo client on its
    chroot, and the run root."""

    cluster: EmulatedCluster
    conn_id: str
    zk: object
    run_root: Path



def start_cluster(connect: str, speed: float = 3600.0, sizes=None) -> EmulatedCluster:
    """The scenario's cluster; ``sizes`` ({TopicPartition: bytes}) replaces the scenario's sizes."""
    cluster = EmulatedCluster(connect, ClusterSpec(brokers=RACKS, speed=speed, seed=0)).start()
    if sizes is None:
        cluster.create_topics({name: (assignment, by_p, None) for name, (assignment, by_p) in TOPICS.items()})
    else:
        cluster.create_topics({name: (assignment, {p: sizes[TopicPartition(name, p)] for p in assignment}, None)
                               for name, (assignment, _) in TOPICS.items()})
    return cluster


def submit_by_hand(zk: KazooClient, entries: list[tuple[str, int, list[int]]]) -> None:
    """What another operator's ``kafka-reassign-partitions --execute`` would write."""
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries]}
    zk.create("/admin/reassign_partitions", json.dumps(doc).encode(), makepath=True)


def data_tree(zk: KazooClient) -> dict[str, bytes | None]:
    """Every znode the runbook could write (topics, configs, admin requests), with its data."""
    from tests.zk_helpers import tree

    out = {}
    for root in ("/brokers/topics", "/config/topics", "/config/brokers", "/admin"):
        if zk.exists(root) is not None:
            out.update(tree(zk, root))
    return out


def write_sizes(cluster: EmulatedCluster, directory: Path) -> str:
    path = directory / "log_dirs.json"
    path.write_text(cluster.log_dirs_json(), encoding="utf-8")
    return str(path)


def read(zk: KazooClient, path: str):
    if zk.exists(path) is None:
        return None
    data, _ = zk.get(path)
    return json.loads(data) if data else None


def assignment(zk: KazooClient) -> dict[tuple[str, int], list[int]]:
    out = {}
    for topic in zk.get_children("/brokers/topics"):
        doc = read(zk, f"/brokers/topics/{topic}")
        for p, replicas in doc["partitions"].items():
            out[(topic, int(p))] = replicas
    return out


def states(zk: KazooClient) -> dict[tuple[str, int], dict]:
    return {(t, p): read(zk, f"/brokers/topics/{t}/partitions/{p}/state") for t, p in assignment(zk)}


def config(zk: KazooClient, entity_type: str, name: str) -> dict[str, str]:
    doc = read(zk, f"/config/{entity_type}/{name}")
    return dict(doc["config"]) if doc else {}


def throttle_configs(zk: KazooClient) -> dict[str, dict[str, str]]:
    """Every throttle key present anywhere (topics and brokers)."""
    out = {}
    for entity_type in ("topics", "brokers"):
        if zk.exists(f"/config/{entity_type}") is None:
            continue
        for name in zk.get_children(f"/config/{entity_type}"):
            found = {k: v for k, v in config(zk, entity_type, name).items() if "throttled" in k}
            if found:
                out[f"{entity_type}/{name}"] = found
    return out


def plan_targets(run_folder: Path) -> dict[tuple[str, int], list[int]]:
    doc = json.loads((run_folder / "plan" / "plan.json").read_text())
    return {(e["topic"], e["partition"]): e["replicas"] for e in doc["partitions"]}


def audit(run_folder: Path) -> list[dict]:
    path = run_folder / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def always_open_windows(conn_id: str, extra: str = "") -> str:
    """A windows file whose one window, open all week, admits every runbook on ``conn_id``; ``extra``:
    more keys of the cluster, each line indented by four spaces."""
    return (f"clusters:\n  {conn_id}:\n    windows:\n      - name: always\n        start: \"* * * * *\"\n"
            f"        duration: 7d\n        timezone: UTC\n        runbooks: ['*']\n{extra}")
