"""The private ZooKeeper the tests use is real, serves on loopback, and isolates chroots."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_zk.embedded_zookeeper import EmbeddedZooKeeper, EmbeddedZooKeeperError, four_letter_word


def test_server_answers_ruok_on_loopback(zk_server):
    assert zk_server.host == "127.0.0.1"
    assert four_letter_word(zk_server.host, zk_server.port, "ruok") == "imok"


def test_each_test_gets_an_empty_chroot(zk):
    assert zk.get_children("/") == []
    zk.create("/brokers/ids", makepath=True)
    assert zk.get_children("/") == ["brokers"]


def test_the_server_runs_with_the_heap_it_is_given_and_refuses_a_heap_that_is_not_a_size():
    with pytest.raises(EmbeddedZooKeeperError, match="heap '4 GB': give the JVM's -Xmx size"):
        EmbeddedZooKeeper(heap="4 GB")
    with EmbeddedZooKeeper(heap="96m") as server:
        assert four_letter_word(server.host, server.port, "ruok") == "imok"
        with open(f"/proc/{server.process.pid}/cmdline", "rb") as f:
            assert b"-Xmx96m" in f.read().split(b"\0")


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_server_stops_when_the_process_that_started_it_is_killed_without_stopping_it():
    # a rehearsal child killed at its step's time limit gets SIGKILL: no stop(), no atexit
    starter = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from kafka_zk.embedded_zookeeper import EmbeddedZooKeeper\n"
         "server = EmbeddedZooKeeper(heap='96m').start()\n"
         "print(server.process.pid, server.port, server.data_dir, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True, cwd=str(Path(__file__).resolve().parents[2]))
    try:
        pid, port, data_dir = starter.stdout.readline().split()
        assert four_letter_word("127.0.0.1", int(port), "ruok") == "imok"
        starter.kill()
        starter.wait(timeout=30)
        deadline = time.monotonic() + 60
        while not (_gone(int(pid)) and not Path(data_dir).exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(int(pid)), f"ZooKeeper {pid} outlived the process that started it"
        assert not Path(data_dir).exists()
    finally:
        if starter.poll() is None:
            starter.kill()


def test_a_stopped_server_leaves_no_guard_behind():
    with EmbeddedZooKeeper(heap="96m") as server:
        guard = server._guard
        assert guard is not None and guard.poll() is None
        assert f"on {server.connect_string} running as pid {server.process.pid}" in server.describe()
    assert guard.poll() is not None and server.process is None
    assert "stopped" in server.describe()
