"""The private ZooKeeper the tests use is real, serves on loopback, and isolates chroots."""

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
