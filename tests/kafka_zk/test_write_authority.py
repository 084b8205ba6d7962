"""The write gate's authority on a real ZooKeeper: no writer without one, no run write without the
approval of exactly what the step acts on, a teardown limited to its own throttles, dry runs free."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_zk.authority import THROTTLE_KEYS, ApprovalOnRecord, OwnThrottlesOnly, PersonAtKeyboard
from kafka_zk.errors import InvalidInput, WriteNotApproved
from kafka_zk.writer import ZkWriter
from tests.zk_helpers import tree

REASSIGN = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
PLAN = "ab" * 32


def on_record(tmp_path, acting_on=lambda: PLAN) -> ApprovalOnRecord:
    return ApprovalOnRecord(tmp_path / "approval.json", acting_on)


def approve(tmp_path, decision="approved", plan_hash=PLAN, by="carol.sre") -> None:
    (tmp_path / "approval.json").write_text(json.dumps({"decision": decision, "plan_hash": plan_hash, "by": by,
                                                        "at": "2026-11-26T10:00:00+00:00"}))


def test_a_writer_cannot_be_built_without_an_authority(zk):
    with pytest.raises(TypeError, match="authority"):
        ZkWriter(zk)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="authority"):
        ZkWriter(zk, authority=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("record, says", [
    (None, "missing approval"),
    ({"decision": "rejected", "plan_hash": PLAN, "by": "carol.sre"}, "decision 'rejected' by carol.sre"),
    ({"decision": "dry_run", "plan_hash": PLAN, "by": None}, "decision 'dry_run'"),
    ({"decision": "approved", "plan_hash": "cd" * 32, "by": "carol.sre"}, "approves plan cdcdcdcdcdcd…"),
])
def test_a_run_write_without_the_approval_of_its_plan_is_refused_and_nothing_written(zk, tmp_path, record, says):
    if record is not None:
        (tmp_path / "approval.json").write_text(json.dumps(record))
    w = ZkWriter(zk, authority=on_record(tmp_path))
    before = tree(zk, "/")
    with pytest.raises(WriteNotApproved, match=says) as err:
        w.create("/admin/reassign_partitions", REASSIGN)
    assert "nothing written" in str(err.value) and "/admin/reassign_partitions" in str(err.value)
    with pytest.raises(WriteNotApproved):
        w.write_config("brokers", "1", {"leader.replication.throttled.rate": "1000"})
    assert tree(zk, "/") == before and w.planned == []


def test_an_approved_plan_writes_and_a_record_withdrawn_meanwhile_stops_the_next_write(zk, tmp_path):
    approve(tmp_path)
    asked = []
    w = ZkWriter(zk, authority=on_record(tmp_path, lambda: asked.append(1) or PLAN))
    w.write_config("brokers", "1", {"leader.replication.throttled.rate": "1000"})
    assert zk.exists("/config/brokers/1") and asked == [1]      # the hash is asked once per writer
    approve(tmp_path, decision="rejected")
    with pytest.raises(WriteNotApproved, match="rejected"):
        w.create("/admin/reassign_partitions", REASSIGN)
    assert zk.exists("/admin/reassign_partitions") is None


def test_a_step_that_cannot_say_what_it_acts_on_writes_nothing(zk, tmp_path):
    approve(tmp_path)

    def no_plan() -> str:
        raise InvalidInput("plan/plan.json does not exist: run the plan step first")

    with pytest.raises(WriteNotApproved, match="cannot tell which plan .*plan.json does not exist"):
        ZkWriter(zk, authority=on_record(tmp_path, no_plan)).create("/admin/reassign_partitions", REASSIGN)
    assert zk.exists("/admin/reassign_partitions") is None


def test_a_dry_run_needs_no_approval_and_writes_nothing(zk, tmp_path):
    w = ZkWriter(zk, dry_run=True, authority=on_record(tmp_path))
    w.create("/admin/reassign_partitions", REASSIGN)
    assert [p.path for p in w.planned] == ["/admin/reassign_partitions"]
    assert zk.exists("/admin/reassign_partitions") is None
    assert w.dry_twin().authority is w.authority


def test_the_teardown_restores_its_own_throttles_and_nothing_else(zk):
    user = ZkWriter(zk, authority=PersonAtKeyboard("the test"))
    user.write_config("topics", "foo", {"retention.ms": "1", "leader.replication.throttled.replicas": "0:1"})
    user.write_config("topics", "bar", {"leader.replication.throttled.replicas": "0:1"})
    teardown = ZkWriter(zk, authority=OwnThrottlesOnly(frozenset({"topics/foo", "brokers/1"}), "throttles.json"))
    teardown.write_config("topics", "foo", {"retention.ms": "1"})     # our throttle off, the user's config kept
    teardown.write_config("brokers", "1", {})                          # an empty override set of a listed broker
    before = tree(zk, "/")
    with pytest.raises(WriteNotApproved, match="would change retention.ms"):
        teardown.write_config("topics", "foo", {"retention.ms": "2"})
    with pytest.raises(WriteNotApproved, match="throttles listed in throttles.json"):
        teardown.write_config("topics", "bar", {})                    # not an entity of this run
    with pytest.raises(WriteNotApproved):
        teardown.create("/admin/reassign_partitions", REASSIGN)
    with pytest.raises(WriteNotApproved):
        teardown.delete("/config/topics/foo")
    with pytest.raises(WriteNotApproved, match="notification names topics/bar"):
        teardown.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/bar"}', sequence=True)
    assert tree(zk, "/") == before


def _config(values: dict) -> bytes:
    return json.dumps({"version": 1, "config": values}).encode()


KEYS = st.sampled_from(sorted(THROTTLE_KEYS) + ["retention.ms", "cleanup.policy", "min.insync.replicas"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.dictionaries(KEYS, st.sampled_from(["1", "2", "0:1"]), max_size=5),
       new=st.dictionaries(KEYS, st.sampled_from(["1", "2", "0:1"]), max_size=5))
def test_a_teardown_config_change_passes_exactly_when_only_throttle_keys_change(old, new):
    authority = OwnThrottlesOnly(frozenset({"topics/foo"}))
    other = {k for k in set(old) | set(new) if old.get(k) != new.get(k)} - THROTTLE_KEYS
    if other:
        with pytest.raises(WriteNotApproved):
            authority.authorise("set", "/config/topics/foo", _config(new), _config(old))
    else:
        authority.authorise("set", "/config/topics/foo", _config(new), _config(old))
