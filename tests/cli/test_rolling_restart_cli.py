"""``kafka-runbook restart`` end to end on the emulator (real ZooKeeper, the command as a user runs it).

Six brokers in three racks with data and a producer-like load are rolled rack by rack, one broker
at a time, each restarted by ``kafka-runbook sim fault restart`` (Kafka 2.4.1's timing): no
partition offline in any sample, every preferred leadership back at the end, the replica orders
unchanged, the timeline printed. Bad input is refused before anything is done.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import new_chroot
from tests.rolling_restart_env import (RACKS, REPO, OfflineSampler, preferred_leaders, restart_action,
                                       start_roll_cluster)

CLI = [sys.executable, "-m", "cli.main"]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture
def roll_connect(zk_server) -> str:
    return zk_server.connect_string + new_chroot(zk_server)


def test_a_rolling_restart_from_the_shell_keeps_every_partition_online(roll_connect, zk_server, tmp_path):
    from kazoo.client import KazooClient
    with start_roll_cluster(roll_connect) as cluster:
        zk = KazooClient(hosts=roll_connect)
        zk.start()
        try:
            before = cluster_assignment(zk)
            controller = cluster.controller_id()
            progress = tmp_path / "progress.json"
            with OfflineSampler(roll_connect) as sampler:
                done = _cli("restart", "--zookeeper", roll_connect, "--action", restart_action(roll_connect),
                            "--progress", str(progress), "--poll", "0.1")
            assert done.returncode == 0, done.stderr + done.stdout
            assert sampler.samples > 20 and sampler.offline == set()
            assert cluster_assignment(zk) == before                      # replica orders restored
            assert all(pref == leader for pref, leader in preferred_leaders(zk).values())
            book = json.loads(progress.read_text())
            order = [int(b) for batch in book["batches"] for b in batch["brokers"]]
            racks = [RACKS[b] for b in order]
            assert sorted(order) == [1, 2, 3, 4, 5, 6] and all(len(batch["brokers"]) == 1 for batch in book["batches"])
            assert [racks[i] for i in range(0, 6, 2)] == [racks[i] for i in range(1, 6, 2)]   # rack by rack
            assert order[-1] == controller                                                 # the controller last
            assert all(b["state"] == "done" and b["registered_at"] > b["submitted_at"] for b in book["batches"])
            assert "every broker restarted" in done.stdout and "| leaders back |" in done.stdout
            again = _cli("restart", "--zookeeper", roll_connect, "--action", restart_action(roll_connect),
                         "--progress", str(progress))
            assert again.returncode == 0 and "every broker restarted" in again.stdout
        finally:
            zk.stop()
            zk.close()


def cluster_assignment(zk) -> dict[str, list[int]]:
    out = {}
    for t in ("orders", "events"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        out.update({f"{t}-{p}": r for p, r in doc["partitions"].items()})
    return out


@pytest.mark.parametrize("args, words", [
    (["--brokers", "9"], "brokers [9] are not registered"),
    (["--brokers", "1,1"], "duplicate"),
    (["--racks", "z"], "racks ['z']"),
])
def test_bad_input_is_refused_before_anything_is_done(roll_connect, args, words):
    with start_roll_cluster(roll_connect):
        done = _cli("restart", "--zookeeper", roll_connect, "--action", "true {broker}", *args, timeout=60)
        assert done.returncode == 1 and words in done.stderr, done.stderr
        no_broker = _cli("restart", "--zookeeper", roll_connect, "--action", "systemctl restart kafka", timeout=60)
        assert no_broker.returncode == 1 and "names no broker" in no_broker.stderr
