"""The private ZooKeeper the tests use is real, serves on loopback, and isolates chroots."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_sim.zookeeper_server import EmbeddedZooKeeper, EmbeddedZooKeeperError, four_letter_word


def test_server_answers_ruok_on_loopback(zk_server):
    assert zk_server.host == "127.0.0.1"
    assert four_letter_word(zk_server.host, zk_server.port, b"ruok") == "imok"


def test_each_test_gets_an_empty_chroot(zk):
    assert zk.get_children("/") == []
    zk.create("/brokers/ids", makepath=True)
    assert zk.get_children("/") == ["brokers"]


def test_the_server_runs_with_the_heap_it_is_given_and_refuses_a_heap_that_is_not_a_size():
    with pytest.raises(EmbeddedZooKeeperError, match="heap '4 GB': give the JVM's -Xmx size"):
        EmbeddedZooKeeper(heap="4 GB")
    with EmbeddedZooKeeper(heap="96m") as server:
        assert four_letter_word(server.host, server.port, b"ruok") == "imok"
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
         "from kafka_sim.zookeeper_server import EmbeddedZooKeeper\n"
         "server = EmbeddedZooKeeper(heap='96m').start()\n"
         "print(server.process.pid, server.port, server.data_dir, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True, cwd=str(Path(__file__).resolve().parents[2]))
    try:
        pid, port, data_dir = starter.stdout.readline().split()
        assert four_letter_word("127.0.0.1", int(port), b"ruok") == "imok"
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


def test_start_returns_once_the_server_serves_sessions_not_when_it_first_answers_ruok():
    # ruok answers "imok" as soon as the port is bound; sessions are refused for a while after
    # ("not currently serving requests": 0.7 s on a loaded machine), long enough for a client's
    # reconnection backoff to outlast its own timeout
    with EmbeddedZooKeeper(heap="96m") as server:
        assert "Mode: standalone" in four_letter_word(server.host, server.port, b"srvr")


def test_a_picked_port_another_server_took_first_is_given_up_for_a_new_one(zk_server):
    # free_port() checks a port that the JVM binds seconds later: another server can take it first
    # and answer; start() must not take that server for its own
    server = EmbeddedZooKeeper(heap="96m")
    server.port = zk_server.port
    with server:
        assert server.port != zk_server.port
        assert f"dataDir={server.data_dir / 'data'}/" in four_letter_word(server.host, server.port, b"conf")
    assert "Mode: standalone" in four_letter_word(zk_server.host, zk_server.port, b"srvr")


def test_a_port_given_that_another_server_holds_is_refused_with_the_fix():
    with EmbeddedZooKeeper(heap="96m") as first:
        second = EmbeddedZooKeeper(port=first.port, heap="96m")
        with pytest.raises(EmbeddedZooKeeperError,
                           match=f"another server holds 127.0.0.1:{first.port}: choose another port or leave it out"):
            second.start()
        assert second.process is None and not second.data_dir.exists()
        assert "Mode: standalone" in four_letter_word(first.host, first.port, b"srvr")
