"""Property tests: every payload version round-trips through encode/decode, in any key order."""

import json

from hypothesis import given, settings, strategies as st

from kafka_zk import codecs
from kafka_zk.codecs import TopicPartition

ids = st.integers(0, 2**31 - 1)
small_ids = st.integers(0, 5000)
names = st.text(st.sampled_from("abcXYZ019._-"), min_size=1, max_size=30)
replicas = st.lists(small_ids, min_size=1, max_size=6, unique=True).map(tuple)
pmap = st.dictionaries(st.integers(0, 200), replicas, max_size=8)
tps = st.builds(TopicPartition, names, st.integers(0, 10000))


def scrambled(data: bytes) -> bytes:
    """The same JSON with keys in reverse order and whitespace: readers must not care."""
    def rev(x):
        if isinstance(x, dict):
            return {k: rev(x[k]) for k in reversed(list(x))}
        if isinstance(x, list):
            return [rev(v) for v in x]
        return x
    return json.dumps(rev(json.loads(data)), indent=2).encode()


def roundtrip(obj, decode, **kw):
    data = obj.encode(**kw) if kw else obj.encode()
    assert data == codecs.dumps(json.loads(data))  # compact, as Kafka's Jackson writes
    assert decode(data) == obj
    assert decode(scrambled(data)) == obj


@given(pmap, st.data())
def test_topic_assignment_v1_v2_v3(partitions, data):
    keys = sorted(partitions)
    sub = st.sampled_from(keys) if keys else st.nothing()
    adding = {p: data.draw(replicas) for p in data.draw(st.lists(sub, unique=True, max_size=3))} if keys else {}
    removing = {p: data.draw(replicas) for p in data.draw(st.lists(sub, unique=True, max_size=3))} if keys else {}
    v1 = codecs.TopicAssignment(partitions)
    roundtrip(v1, codecs.decode_topic_assignment)
    v2 = codecs.TopicAssignment(partitions, adding, removing, None, 2)
    roundtrip(v2, codecs.decode_topic_assignment, version=2)
    v3 = codecs.TopicAssignment(partitions, adding, removing, "Y5ZfQ0m9S4uuVx8pCqS0Fg", 3)
    roundtrip(v3, codecs.decode_topic_assignment)
    assert json.loads(v1.encode(version=1)) == {"version": 1, "partitions": {
        str(p): list(r) for p, r in partitions.items()}}


@given(st.integers(1, 5), st.sampled_from(["h1", None]), st.integers(-1, 65535),
       st.lists(st.sampled_from(["PLAINTEXT://h:1", "SSL://h:2"]), unique=True, min_size=1),
       st.sampled_from([None, "r1"]), st.integers(0, 2**40).map(str))
def test_broker_registration_v1_to_v5(version, host, port, endpoints, rack, ts):
    reg = codecs.BrokerRegistration(
        host=host, port=port, endpoints=tuple(endpoints) if version >= 2 else (),
        rack=rack if version >= 3 else None, jmx_port=-1, timestamp=ts,
        listener_security_protocol_map={e.split("://")[0]: e.split("://")[0] for e in endpoints}
        if version >= 4 else None,
        features={} if version >= 5 else None, version=version)
    roundtrip(reg, codecs.decode_broker_registration)


@given(ids, st.integers(0, 2**40).map(str), st.sampled_from([1, 2]), st.integers(-1, 100))
def test_controller_v1_v2_and_epoch(broker, ts, version, kraft):
    c = codecs.ControllerInfo(broker, ts, version, kraft if version == 2 else None)
    roundtrip(c, codecs.decode_controller)
    assert codecs.decode_controller_epoch(codecs.encode_controller_epoch(broker)) == broker


@given(st.integers(-1, 5000), ids, st.lists(small_ids, max_size=6, unique=True).map(tuple), ids,
       st.sampled_from([None, 1]))
def test_partition_state_with_and_without_leader_recovery_state(leader, epoch, isr, cepoch, lrs):
    roundtrip(codecs.PartitionState(leader, epoch, isr, cepoch, 1, lrs), codecs.decode_partition_state)


@given(st.lists(st.builds(codecs.ReassignmentEntry, names, st.integers(0, 10000), replicas), max_size=20))
def test_reassignment_node(entries):
    req = codecs.ReassignmentRequest(tuple(entries))
    roundtrip(req, lambda d: codecs.decode_reassignment(d, strict=True))
    targets = {e.tp: e.replicas for e in entries}
    back = codecs.decode_reassignment_file(codecs.encode_reassignment_file(targets, with_log_dirs=True)) \
        if targets else ()
    assert {e.tp: e.replicas for e in back} == targets


@given(st.lists(tps, max_size=30))
def test_election_isr_change(partitions):
    roundtrip(codecs.PreferredElectionRequest(tuple(partitions)), codecs.decode_preferred_election)
    roundtrip(codecs.IsrChangeNotification(tuple(partitions)), codecs.decode_isr_change)


@given(st.dictionaries(names, st.text(max_size=20), max_size=10))
def test_entity_config(cfg):
    roundtrip(codecs.EntityConfig(cfg), codecs.decode_entity_config)


@given(st.sampled_from(["topics", "clients", "brokers", "users"]), names)
def test_config_change_v1_and_v2(etype, name):
    roundtrip(codecs.ConfigChangeNotification(f"{etype}/{name}"), codecs.decode_config_change)
    if etype in ("topics", "clients"):
        v1 = json.dumps({"version": 1, "entity_type": etype, "entity_name": name}).encode()
        assert codecs.decode_config_change(v1) == codecs.ConfigChangeNotification(f"{etype}/{name}", 1)


@given(st.text(st.sampled_from("ABCabc0123-_"), min_size=22, max_size=22), ids, st.integers(0, 2**62))
def test_singletons(cid, broker, start):
    roundtrip(codecs.ClusterId(cid), codecs.decode_cluster_id)
    assert json.loads(codecs.ClusterId(cid).encode())["version"] == "1"
    roundtrip(codecs.ProducerIdBlock(broker, start, start + 999), codecs.decode_producer_id_block)
    roundtrip(codecs.LogDirEvent(broker), codecs.decode_log_dir_event)


def test_lead_codec_fixes():
    import pytest
    from kafka_zk.errors import InvalidPayload
    with pytest.raises(InvalidPayload, match="expected an integer"):
        codecs.decode_partition_state(b'{"leader":"--5","leader_epoch":0,"isr":[]}')
    assert codecs.decode_partition_state(b'{"leader":"-1","leader_epoch":"2","isr":[]}').leader == -1
    big = json.dumps({"partitions": [{"topic": "t", "partition": i} for i in range(50_000)]
                      + [{"topic": "t", "partition": 7}]})
    with pytest.raises(InvalidPayload, match="duplicate partitions: t-7$"):
        codecs.decode_election_file(big)  # linear, not quadratic, in the number of entries


# values a topic znode may hold, well-formed or not: the typed fast path must agree with the checked one
_odd_scalar = st.one_of(st.integers(-3, 3), st.integers(2**63, 2**70), st.booleans(), st.none(),
                        st.sampled_from(["1", " 2", "x", 1.0, float("nan")]))
_odd_key = st.one_of(st.integers(-2, 300).map(str), st.sampled_from(["01", "+1", " 1", "-0", "1_0", "x", ""]))
_good_map = st.dictionaries(st.integers(0, 50).map(str), st.lists(st.integers(0, 9), max_size=3), max_size=4)
_odd_map = st.one_of(_good_map, st.none(), st.lists(_odd_scalar, max_size=2),
                     st.dictionaries(_odd_key, st.one_of(st.lists(_odd_scalar, max_size=4), _odd_scalar), max_size=5))
_odd_doc = st.fixed_dictionaries({}, optional={
    "partitions": _odd_map, "adding_replicas": _odd_map, "removing_replicas": _odd_map,
    "version": st.one_of(st.integers(1, 3), _odd_scalar),
    "topic_id": st.one_of(st.none(), st.text(max_size=4), st.integers(0, 3)), "other": _odd_scalar})


def _outcome(decode, data):
    try:
        return decode(data)
    except codecs.InvalidPayload as exc:
        return ("refused", str(exc))


@settings(max_examples=300)
@given(doc=_odd_doc, pairs=st.lists(st.tuples(_odd_key, st.lists(st.integers(0, 9), max_size=3)), max_size=4))
def test_topic_assignment_fast_path_agrees_with_the_checked_path_on_any_document(doc, pairs) -> None:
    data = json.dumps(doc).encode()
    if pairs:       # partitions written by hand: keys may repeat (the last one counts, both ways)
        body = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs)
        data = b'{"partitions":{%s}%s' % (body.encode(), b"}" if data == b"{}" else b"," + data[1:])
    assert _outcome(codecs.decode_topic_assignment, data) == \
        _outcome(codecs._decode_topic_assignment_checked, data)


_state_doc = st.fixed_dictionaries(
    {"leader": st.one_of(st.integers(-1, 9), _odd_scalar), "isr": st.one_of(st.lists(st.integers(0, 9), max_size=3),
                                                                           st.lists(_odd_scalar, max_size=2))},
    optional={"leader_epoch": st.one_of(st.integers(0, 9), _odd_scalar),
              "controller_epoch": st.one_of(st.integers(0, 9), _odd_scalar),
              "version": st.one_of(st.integers(1, 3), _odd_scalar),
              "leader_recovery_state": st.one_of(st.integers(0, 1), _odd_scalar), "other": _odd_scalar})


@settings(max_examples=300)
@given(doc=_state_doc, repeat=st.sampled_from([None, "leader", "isr", "leader_recovery_state"]))
def test_partition_state_fast_path_agrees_with_the_checked_path_on_any_document(doc, repeat) -> None:
    data = json.dumps(doc).encode()
    if repeat:      # a key given twice: the last one counts, both ways
        data = data[:-1] + (b", " if doc else b"") + b'"%s": 0}' % repeat.encode()
    assert _outcome(codecs.decode_partition_state, data) == _outcome(codecs._decode_partition_state_checked, data)
