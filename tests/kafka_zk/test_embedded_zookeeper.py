"""The private ZooKeeper the tests use is real, serves on loopback, and isolates chroots."""

from kafka_zk.embedded_zookeeper import four_letter_word


def test_server_answers_ruok_on_loopback(zk_server):
    assert zk_server.host == "127.0.0.1"
    assert four_letter_word(zk_server.host, zk_server.port, "ruok") == "imok"


def test_each_test_gets_an_empty_chroot(zk):
    assert zk.get_children("/") == []
    zk.create("/brokers/ids", makepath=True)
    assert zk.get_children("/") == ["brokers"]
