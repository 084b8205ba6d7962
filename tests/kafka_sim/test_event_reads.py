"""What the emulator reads back from ZooKeeper within one event, and what it does not (kafka_sim/zk_io.py EventReads).

One engine event reads a partition's state znode from ZooKeeper once; a second read in the same
event is answered from the first (or from the event's own write of it); the next event reads
ZooKeeper again, so a hand edit made between events is seen. A view change that changes nothing
does not re-plan the replication model (kafka_sim/replication.py).
"""

from __future__ import annotations

import json

from kafka_zk.codecs import TopicPartition

TP = TopicPartition("t", 0)
STATE = "/brokers/topics/t/partitions/0/state"


def _engine(make_cluster):
    """The engine of a 3-broker cluster with topic ``t`` (one partition on 0, 1, 2), idle."""
    cluster = make_cluster(brokers={0: "a", 1: "b", 2: "c"})
    cluster.create_topic("t", {0: [0, 1, 2]})
    cluster.wait_idle(30)
    return cluster._engine


def _hand_edit_isr(zk, isr: list[int]) -> int:
    data, stat = zk.get(STATE)
    doc = json.loads(data)
    doc["isr"] = isr
    return zk.set(STATE, json.dumps(doc).encode(), version=stat.version).version


def test_a_second_read_in_one_event_is_the_first_and_the_next_event_reads_zookeeper(make_cluster, zk):
    eng = _engine(make_cluster)

    def read_edit_read():
        ctrl = eng.controller
        first = ctrl.read_state(TP)
        edited = _hand_edit_isr(zk, [0, 1])          # another session writes between the two reads
        second = ctrl.read_state(TP)
        return first, second, edited

    first, second, edited = eng.call(read_edit_read)
    assert second == first and list(first.isr) == [0, 1, 2]
    after = eng.call(lambda: (eng.controller.read_state(TP), eng.controller.states[TP][1]))
    assert list(after[0].isr) == [0, 1] and after[1] == edited


def test_the_controllers_own_write_is_what_the_same_event_reads_next(make_cluster, zk):
    eng = _engine(make_cluster)

    def bump_then_read():
        ctrl = eng.controller
        written = ctrl.update_state(TP, lambda st: (st.leader, st.isr))
        return written, ctrl.read_state(TP), ctrl.states[TP][1]

    written, read, version = eng.call(bump_then_read)
    data, stat = zk.get(STATE)
    assert read == written and json.loads(data)["leader_epoch"] == written.leader_epoch
    assert version == stat.version


def test_a_stale_read_fails_the_conditional_write_and_the_retry_reads_zookeeper(make_cluster, zk):
    eng = _engine(make_cluster)

    def read_edit_update():
        ctrl = eng.controller
        ctrl.read_state(TP)
        _hand_edit_isr(zk, [0, 2])                   # the event's copy is now stale
        written = ctrl.update_state(TP, lambda st: (st.leader, st.isr))
        # read within the event: once it ends, the leader adds the caught-up broker 1 back
        return written, json.loads(zk.get(STATE)[0])["isr"]

    written, stored = eng.call(read_edit_update)
    assert list(written.isr) == [0, 2]               # BADVERSION, re-read from ZooKeeper, written
    assert stored == [0, 2]


def test_a_view_change_that_changes_nothing_does_not_replan_the_model(make_cluster):
    eng = _engine(make_cluster)

    def same_then_other():
        pd = eng.model.parts[TP]
        before = eng.model.version
        eng.model.set_view(TP, replicas=pd.replicas, leader=pd.leader, isr=pd.isr)
        same = eng.model.version
        eng.model.set_view(TP, isr=(pd.leader,))
        return before, same, eng.model.version, dict(eng.model.parts[TP].have)

    before, same, other, have = eng.call(same_then_other)
    assert same == before and other == before + 1
    assert set(have) == {1, 2}                       # the two dropped followers now copy
