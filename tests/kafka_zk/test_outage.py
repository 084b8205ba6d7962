"""kafka_zk/outage.py: which errors are an outage, and the bounded wait for the session (real ZooKeeper)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError

from kafka_zk.errors import InvalidInput, ZkUnavailable
from kafka_zk.outage import OutageRider, ZkOutageTooLong, is_outage, wait_for_session, zk_cause


def test_an_outage_is_zookeeper_not_answering_not_an_answer_that_refuses() -> None:
    assert is_outage(ConnectionLoss()) and is_outage(SessionExpiredError()) and is_outage(ZkUnavailable("x"))
    assert not is_outage(NoNodeError()) and not is_outage(InvalidInput("x")) and not is_outage(ValueError())
    try:
        try:
            raise ConnectionLoss("socket closed")
        except ConnectionLoss as inner:
            raise ZkUnavailable("[/brokers/ids/1] ZooKeeper did not answer") from inner
    except ZkUnavailable as outer:
        assert zk_cause(outer) == "ConnectionLoss: socket closed"


def test_the_wait_for_the_session_answers_at_once_when_connected_and_gives_up_at_its_bound(zk_connect) -> None:
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=10)
    try:
        assert wait_for_session(client, 5.0)
        rider = OutageRider(client, bound_s=5.0, log=lambda text: None)
        rider.ride(ConnectionLoss(), "the registration gate of broker 1")
        assert rider.outages == 1
        rider.ok()
    finally:
        client.stop()                 # a stopped client never answers again: the bound ends the wait
    rider = OutageRider(client, bound_s=0.5, log=lambda text: None)
    with pytest.raises(ZkOutageTooLong, match=r"ZooKeeper did not answer for \d+s at the registration gate of broker "
                                              r"1 \(bound 0.5s; last error ConnectionLoss"):
        rider.ride(ConnectionLoss(), "the registration gate of broker 1")
    client.close()
