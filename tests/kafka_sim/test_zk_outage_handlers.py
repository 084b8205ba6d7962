"""The controller's other handlers when one of their writes is cut off in flight.

A lost connection under a controller write gives the event up (Kafka's controller never sees
one: its ZooKeeperClient sends the request again); the emulator runs the event again when the
session answers (``Engine._retry_soon``, ``Controller.resync``). Running it again must redo what
the cut write was part of: the handler's memory must not already say "done" for a write
ZooKeeper never saw. Each test cuts one exact write (tests/kafka_sim/cut_write.py) and reads the
end state from ZooKeeper with plain kazoo. The reassignment's own writes are pinned in
tests/kafka_sim/test_zk_outage.py.
"""

from __future__ import annotations

import json

import pytest
from kazoo.exceptions import ConnectionLoss

from tests.campaign.blip_proxy import BlipProxy
from kafka_sim import zk_io
from tests.kafka_sim.cut_write import caught_up, cut_first_write, cut_in_flight, wait_caught_up
from tests.kafka_sim.test_zk_outage import BROKERS, _cluster
from tests.kafka_sim.zk_read import create_json, get_json, state, topic, wait_for
from tests.zk_helpers import set_config_by_hand


#: what the cut loses: the request (ZooKeeper never saw the write) or its reply (ZooKeeper did it)
LOST = ["request", "reply"]


@pytest.fixture
def behind_proxy(zk_server, zk_chroot):
    """A BlipProxy in front of the real server and an emulated cluster connected through it."""
    proxy = BlipProxy((zk_server.host, zk_server.port))
    cluster = _cluster(proxy.hosts + zk_chroot)
    yield proxy, cluster
    cluster.stop()
    proxy.close()


def _in_sync(cluster, zk, name: str, replicas: list[int], size: int | None = None) -> None:
    """Topic ``name``, one partition on ``replicas``, created and in sync."""
    cluster.create_topics({name: ({0: replicas}, None if size is None else {0: size}, None)})
    wait_for(lambda: state(zk, name, 0) and sorted(state(zk, name, 0)["isr"]) == sorted(replicas),
             what=f"{name}'s ISR")


def _led_by_the_controller(cluster, zk) -> tuple[int, int]:
    """Topic ``led`` on [the controller's broker, the lowest other]; returns both ids."""
    ctrl = cluster.controller_id()
    other = min(b for b in BROKERS if b != ctrl)
    _in_sync(cluster, zk, "led", [ctrl, other])
    return ctrl, other


def _holder(zk) -> int:
    """``/controller``'s broker id (−1: none), read with the test's own session (the emulator's
    tool session goes through the proxy, so the cut hits it too)."""
    doc = get_json(zk, "/controller")
    return -1 if doc is None else doc["brokerid"]


def _cut_landed(seen: list, what: str, cluster, before: int) -> None:
    """The cut landed on the write, then the controller caught up and went idle."""
    wait_for(lambda: seen, timeout=60, what=what)
    assert isinstance(seen[0], ConnectionLoss), f"the cut did not land on {what}: {seen[0]!r}"
    wait_caught_up(cluster, before)


@pytest.mark.parametrize("lost", LOST)
def test_a_broker_failure_whose_offline_election_is_cut_off_still_moves_the_leadership(
        lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller hears a broker die and its first state write (the offline election of a
    partition the broker led) is cut: the re-run must see the broker as just dead again, not
    find "no change" in its memory of live brokers and leave the partition led by a dead broker."""
    proxy, cluster = behind_proxy
    ctrl = cluster.controller_id()
    victim, other = [b for b in sorted(BROKERS) if b != ctrl][:2]
    _in_sync(cluster, zk, "led", [victim, other])
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, "set", "/brokers/topics/led/partitions/0/state", lost=lost)
    cluster.kill_broker(victim)
    _cut_landed(seen, "the offline election's state write", cluster, before)
    wait_for(lambda: state(zk, "led", 0)["leader"] == other and state(zk, "led", 0)["isr"] == [other],
             timeout=60, what=f"leadership moved to {other}, {victim} out of the ISR")


#: the deletion's writes, each cut by one run: a replica going offline (its ISR write), the topic znode's delete
DELETION_WRITES = {"offline": ("set", "/brokers/topics/doomed/partitions/0/state"),
                   "complete": ("delete", "/brokers/topics/doomed")}


@pytest.mark.parametrize("cut", list(DELETION_WRITES))
@pytest.mark.parametrize("lost", LOST)
def test_a_topic_deletion_cut_off_in_flight_still_deletes_the_topic(
        cut: str, lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deletion marker is acted on and one of the deletion's writes is cut: the re-run must
    start the deletion again, not find the topic already queued and wait for ever."""
    proxy, cluster = behind_proxy
    cluster.create_topics({"doomed": ({0: [1, 2]}, None, None), "kept": ({0: [2, 3]}, None, None)})
    wait_for(lambda: state(zk, "doomed", 0) and sorted(state(zk, "doomed", 0)["isr"]) == [1, 2],
             what="the topic's ISR")
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, *DELETION_WRITES[cut], lost=lost)
    zk.create("/admin/delete_topics/doomed", b"", makepath=True)
    _cut_landed(seen, f"the deletion's {cut} write", cluster, before)
    wait_for(lambda: zk.exists("/brokers/topics/doomed") is None and zk.get_children("/admin/delete_topics") == [],
             timeout=60, what="the deletion to finish")
    assert zk.exists("/brokers/topics/kept/partitions/0/state") is not None
    # nothing of it is left in the controller: the same name created again gets a leader
    create_json(zk, "/brokers/topics/doomed", {"version": 1, "partitions": {"0": [2, 3]}})
    wait_for(lambda: state(zk, "doomed", 0) and state(zk, "doomed", 0)["leader"] == 2, timeout=60,
             what="the topic created again to get its leader")


@pytest.mark.parametrize("lost", LOST)
def test_a_topic_created_by_hand_whose_first_leader_write_is_cut_off_still_gets_its_leader(
        lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic znode written as ``kafka-topics.sh --zookeeper`` does, then a new partition added
    to it the same way: each time the controller's state create is cut. The re-run must create
    the partition's state, not find the topic (or partition) already known and do nothing."""
    proxy, cluster = behind_proxy
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, "create", "/brokers/topics/fresh/partitions/0/state", lost=lost)
    zk.create("/brokers/topics/fresh", json.dumps({"version": 1, "partitions": {"0": [1, 2]}}).encode(),
              makepath=True)
    _cut_landed(seen, "the new topic's state create", cluster, before)
    wait_for(lambda: state(zk, "fresh", 0) and state(zk, "fresh", 0)["leader"] == 1, timeout=60,
             what="the new topic's leader")
    monkeypatch.undo()
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, "create", "/brokers/topics/fresh/partitions/1/state", lost=lost)
    zk.set("/brokers/topics/fresh", json.dumps({"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}}).encode())
    _cut_landed(seen, "the added partition's state create", cluster, before)
    wait_for(lambda: state(zk, "fresh", 1) and state(zk, "fresh", 1)["leader"] == 2, timeout=60,
             what="the added partition's leader")
    assert topic(zk, "fresh")["partitions"] == {"0": [1, 2], "1": [2, 3]}


@pytest.mark.parametrize("lost", LOST)
def test_a_failover_cut_off_in_flight_is_run_again_and_elects_the_dead_controllers_partitions(
        lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's broker dies; the new controller's failover elects a leader for the
    partition the dead broker led, and that state write is cut. Kafka's failover sends it again;
    the emulator's must load and act again when the session answers, not keep a half-loaded
    controller whose memory already says the dead broker is gone and the partition is seen."""
    proxy, cluster = behind_proxy
    ctrl, other = _led_by_the_controller(cluster, zk)
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, "set", "/brokers/topics/led/partitions/0/state", lost=lost)
    cluster.kill_broker(ctrl)
    _cut_landed(seen, "the failover's offline election", cluster, before)
    wait_for(lambda: state(zk, "led", 0)["leader"] == other, timeout=60,
             what=f"leadership moved to {other} after the failover")
    assert _holder(zk) != ctrl
    redone = [e.broker for e in cluster.history() if e.kind == "controller_failover_redone"]
    assert redone == [_holder(zk)]


@pytest.mark.parametrize("lost", LOST)
def test_an_unclean_election_enabled_by_config_and_cut_off_in_flight_still_elects(
        lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition without a live ISR member; ``unclean.leader.election.enable=true`` set by hand
    on its topic, and the controller's election write it triggers is cut. The notification is
    read again when the sessions answer: it must be applied again, not found already seen."""
    proxy, cluster = behind_proxy
    ctrl = cluster.controller_id()
    leader, follower = [b for b in sorted(BROKERS) if b != ctrl][:2]
    _in_sync(cluster, zk, "u", [leader, follower], size=1000)
    cluster.stall_replica("u", 0, follower)
    wait_for(lambda: state(zk, "u", 0)["isr"] == [leader], timeout=60, what="the follower dropped")
    cluster.kill_broker(leader)
    wait_for(lambda: state(zk, "u", 0)["leader"] == -1, timeout=60, what="no eligible leader")
    before = caught_up(cluster)
    seen = cut_first_write(monkeypatch, proxy, "set", "/brokers/topics/u/partitions/0/state", lost=lost)
    set_config_by_hand(zk, "topics/u", {"unclean.leader.election.enable": "true"})
    _cut_landed(seen, "the unclean election's state write", cluster, before)
    wait_for(lambda: state(zk, "u", 0)["leader"] == follower, timeout=60, what="the unclean leader")
    assert state(zk, "u", 0)["isr"] == [follower]


@pytest.mark.parametrize("lost", LOST)
def test_a_controller_election_cut_off_in_flight_still_ends_with_a_controller_that_acts(
        lost: str, behind_proxy, zk, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's broker dies; the next broker's election (create ``/controller`` and bump
    ``/controller_epoch``, one multi) is cut. Request lost: nobody holds ``/controller``, the next
    check elects. Reply lost: the broker holds ``/controller`` at the epoch it wrote without
    knowing it — Kafka's retry finds both its own (``checkControllerAndEpoch``) and goes on; the
    emulator must too, not stay without a controller while its own broker holds the node."""
    proxy, cluster = behind_proxy
    ctrl, other = _led_by_the_controller(cluster, zk)
    epoch = int(zk.get("/controller_epoch")[0])
    real_try_elect, seen = zk_io.try_elect, []

    def try_elect(*args, **kwargs):
        if seen:
            return real_try_elect(*args, **kwargs)
        return cut_in_flight(proxy, lambda: real_try_elect(*args, **kwargs), seen, lost)
    monkeypatch.setattr(zk_io, "try_elect", try_elect)
    cluster.kill_broker(ctrl)
    wait_for(lambda: seen, timeout=60, what="the election")
    assert isinstance(seen[0], ConnectionLoss), f"the cut did not land on the election: {seen[0]!r}"
    wait_for(lambda: state(zk, "led", 0)["leader"] == other, timeout=60, what=f"leadership moved to {other}")
    elected = [e.broker for e in cluster.history() if e.kind == "controller_elected"]
    assert _holder(zk) == elected[-1] != ctrl
    assert int(zk.get("/controller_epoch")[0]) == epoch + 1      # one election, whichever way it was cut
    claimed = [e for e in cluster.history() if e.kind == "controller_elected" and "answer was lost" in e.detail]
    assert len(claimed) == (1 if lost == "reply" else 0)
