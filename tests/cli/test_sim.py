"""``kafka-runbook sim``: foreground run, log-dirs, faults from another process, clean SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from tests.kafka_sim.zk_read import wait_for

CLI = [sys.executable, "-m", "cli.main"]
REPO = Path(__file__).resolve().parents[2]          # the checkout under test, wherever it is


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_sim_runs_until_sigterm_and_serves_log_dirs_and_faults(zk_connect, zk):
    proc = subprocess.Popen([*CLI, "sim", "--zookeeper", zk_connect, "--brokers", "4", "--racks", "2",
                             "--topics", "2", "--partitions", "3", "--replication-factor", "2",
                             "--size-distribution", "fixed", "--mean-size", "1000", "--seed", "7", "--fixed-cost", "off"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        assert line.startswith("kafka-runbook sim: 4 brokers, 6 partitions") and "fixed cost off" in line, line
        assert proc.stdout.readline().strip() == zk_connect
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2", "3"]
        assert sorted(zk.get_children("/brokers/topics")) == ["topic-0000", "topic-0001"]
        wait_for(lambda: zk.exists("/kafka-sim/log-dirs"), what="sizes published")
        out = _cli("sim", "log-dirs", "--zookeeper", zk_connect)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert [b["broker"] for b in doc["brokers"]] == [0, 1, 2, 3]
        sizes = [p["size"] for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]]
        assert sizes == [1000] * 12                          # 6 partitions × RF 2, fixed size
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "kill-broker", "3")
        assert out.returncode == 0 and "done" in out.stdout, out.stderr
        assert zk.exists("/brokers/ids/3") is None
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "kill-broker", "99")
        assert out.returncode == 1 and "broker 99 is not in this cluster" in out.stderr
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "restart-broker", "3")
        assert out.returncode == 0, out.stderr
        assert zk.exists("/brokers/ids/3") is not None
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "move-controller", "2")
        assert out.returncode == 0 and "(2)" in out.stdout, out.stderr
        assert json.loads(zk.get("/controller")[0])["brokerid"] == 2
        for args in (["stall-replica", "topic-0000", "0", "1"],
                     ["stall-replica", "topic-0000", "0", "1", "--resume"],
                     ["slow-broker", "1", "1000000"], ["corrupt-record", "topic-0000", "0", "1", "5"],
                     ["corrupt-record", "topic-0000", "0", "1", "40", "bytes"],
                     ["corrupt-record", "topic-0000", "0", "1", "60", "header"], ["expire-session", "0"]):
            out = _cli("sim", "fault", "--zookeeper", zk_connect, *args)
            assert out.returncode == 0, (args, out.stderr)
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "slow-broker", "1")
        assert out.returncode == 1 and "wrong arguments" in out.stderr
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "corrupt-record", "topic-0000", "0", "1", "5", "melted")
        assert out.returncode == 1 and "corruption 'melted' is not one of value, bytes, header" in out.stderr
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "stall-replica", "nosuch", "0", "1")
        assert out.returncode == 1 and "done" not in out.stdout
        assert "partition nosuch-0 does not exist" in out.stderr
        out = _cli("sim", "fault", "--zookeeper", zk_connect, "stall-replica", "topic-0000", "0", "99")
        assert out.returncode == 1 and "broker 99 is not in this cluster" in out.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code == 0
    assert zk.get_children("/brokers/ids") == [] and zk.exists("/controller") is None


def test_sim_refuses_bad_flags(capsys):
    assert main(["sim", "--brokers", "3"]) == 1
    assert "give --zookeeper" in capsys.readouterr().err
    assert main(["sim", "--zookeeper", "127.0.0.1:1/x", "--brokers", "2", "--replication-factor", "3"]) == 1
    assert "--replication-factor 3" in capsys.readouterr().err


def test_log_dirs_without_a_running_emulator(zk_connect, capsys):
    assert main(["sim", "log-dirs", "--zookeeper", zk_connect]) == 1
    assert "no emulator sizes published" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["maybe"])
def test_delete_topic_enable_flag_is_checked(value, capsys):
    with pytest.raises(SystemExit):
        main(["sim", "--zookeeper", "127.0.0.1:1/x", "--delete-topic-enable", value])
    assert "is not true or false" in capsys.readouterr().err


def test_sim_with_embedded_zookeeper_prints_its_connect_string():
    from kazoo.client import KazooClient

    proc = subprocess.Popen([*CLI, "sim", "--embedded-zookeeper", "--brokers", "3", "--racks", "0",
                             "--topics", "1", "--partitions", "2", "--replication-factor", "1",
                             "--delete-topic-enable", "false"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        if not line:                        # the command ended: say why (its stderr), not just ''
            proc.wait(timeout=30)
            pytest.fail(f"kafka-runbook sim exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
        assert line.startswith("kafka-runbook sim: 3 brokers, 2 partitions"), line
        assert "per-move fixed cost 0.18/0.5/0.3 s" in line, line          # Kafka 2.4.1's, by default
        connect = proc.stdout.readline().strip()
        assert connect.startswith("127.0.0.1:") and connect.endswith("/kafka")
        client = KazooClient(hosts=connect, timeout=10)
        client.start(timeout=10)
        try:
            assert sorted(client.get_children("/brokers/ids")) == ["0", "1", "2"]
            assert "rack" not in json.loads(client.get("/brokers/ids/0")[0])
            client.create("/admin/delete_topics/topic-0000")
            wait_for(lambda: client.exists("/admin/delete_topics/topic-0000") is None, what="marker dropped")
            assert client.exists("/brokers/topics/topic-0000") is not None
        finally:
            client.stop()
            client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_sim_from_snapshot_seeds_a_copy_and_refuses_a_chroot_in_use(zk_connect, zk, tmp_path, zk_server):
    from kafka_zk.codecs import TopicPartition
    from kafka_zk.log_dirs import encode_log_dirs
    from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
    from formats.snapshot_file import write_snapshot
    from tests.conftest import new_chroot
    from tests.zk_helpers import tree

    parts = {p: Partition("orders", p, (p % 3, (p + 1) % 3), leader=p % 3, isr=(p % 3, (p + 1) % 3))
             for p in range(3)}
    write_snapshot(ClusterSnapshot({b: Broker(b, "ab"[b % 2], "h", 9092) for b in range(3)},
                                   {"orders": Topic("orders", parts)}), str(tmp_path / "snap.jsonl"))
    (tmp_path / "log-dirs.json").write_text(encode_log_dirs({0: {TopicPartition("orders", 0): 4096}}))
    proc = subprocess.Popen([*CLI, "sim", "--zookeeper", zk_connect, "--from-snapshot", str(tmp_path / "snap.jsonl"),
                             "--sizes", str(tmp_path / "log-dirs.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout.readline().startswith("kafka-runbook sim: 3 brokers, 3 partitions")
        assert proc.stdout.readline().strip() == zk_connect
        assert sorted(zk.get_children("/brokers/topics")) == ["orders"]
        assert json.loads(zk.get("/brokers/topics/orders")[0])["partitions"] == {"0": [0, 1], "1": [1, 2], "2": [2, 0]}
        wait_for(lambda: zk.exists("/kafka-sim/log-dirs"), what="sizes published")
        doc = json.loads(_cli("sim", "log-dirs", "--zookeeper", zk_connect).stdout)
        sizes = {(p["partition"], b["broker"]): p["size"] for b in doc["brokers"] for d in b["logDirs"]
                 for p in d["partitions"]}
        assert sizes[("orders-0", 0)] == 4096 and sizes[("orders-1", 1)] == 0
        before = tree(zk)
        out = _cli("sim", "--zookeeper", zk_connect, "--from-snapshot", str(tmp_path / "snap.jsonl"))
        assert out.returncode == 1 and "already holds /brokers/ids" in out.stderr and "private" in out.stderr
        assert {k: v for k, v in tree(zk).items() if not k.startswith("/kafka-sim")} == \
            {k: v for k, v in before.items() if not k.startswith("/kafka-sim")}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    other = f"{zk_server.connect_string}{new_chroot(zk_server)}"
    out = _cli("sim", "--zookeeper", other, "--sizes", str(tmp_path / "log-dirs.json"))
    assert out.returncode == 1 and "go with --from-snapshot" in out.stderr


def test_sim_embedded_zookeeper_and_listeners_on_the_ports_asked_for(capsys):
    """Issue 24: ``--zookeeper-port`` for the embedded ZooKeeper, ``--listener-base-port`` for the
    brokers (broker n in id order on base + n, registered with that port); a port in use is refused
    before anything starts, naming the option."""
    import socket

    from kazoo.client import KazooClient

    from tests.real_airflow import free_port

    zk_port, base = free_port(), free_port()
    while any(not _free(p) for p in range(base, base + 3)) or zk_port in range(base, base + 3):
        base = free_port()
    proc = subprocess.Popen([*CLI, "sim", "--embedded-zookeeper", "--zookeeper-port", str(zk_port),
                             "--listener-base-port", str(base), "--brokers", "3", "--racks", "0", "--topics", "1",
                             "--partitions", "1", "--replication-factor", "1", "--size-distribution", "fixed",
                             "--mean-size", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout.readline().startswith("kafka-runbook sim: 3 brokers")
        assert proc.stdout.readline().strip() == f"127.0.0.1:{zk_port}/kafka"
        zk = KazooClient(hosts=f"127.0.0.1:{zk_port}/kafka", timeout=10)
        zk.start(timeout=30)
        try:
            ports = {int(b): json.loads(zk.get(f"/brokers/ids/{b}")[0])["port"] for b in zk.get_children("/brokers/ids")}
        finally:
            zk.stop()
            zk.close()
        assert ports == {0: base, 1: base + 1, 2: base + 2}
        for port in ports.values():
            socket.create_connection(("127.0.0.1", port), timeout=10).close()   # listening
        with socket.socket() as busy:                                         # a port in use: refused up front
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            taken = busy.getsockname()[1]
            assert main(["sim", "--embedded-zookeeper", "--zookeeper-port", str(taken), "--brokers", "1",
                         "--racks", "0", "--replication-factor", "1"]) == 1
            assert f"--zookeeper-port: 127.0.0.1:{taken} cannot be listened on" in capsys.readouterr().err
        assert main(["sim", "--zookeeper", "127.0.0.1:1/x", "--zookeeper-port", "2181"]) == 1
        assert "--zookeeper-port is the port of --embedded-zookeeper" in capsys.readouterr().err
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code == 0


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
