"""``kafka-runbook verify-replicas`` against the emulator, over the Kafka protocol: a healthy
cluster verifies clean, a diverged follower record is found and named, a lagging follower shows
its lag, a dead or silent broker is a clear error within the --max-wait-ms bound, bad options
are one line each."""

import json
import re
import socket

import pytest

from cli.main import main
from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.wire.records import BATCH_BYTES, BATCH_RECORDS
from tests.conftest import new_chroot

LINE_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: verification process is started\.$", re.M)


@pytest.fixture(scope="module")
def cluster(zk_server):
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=50.0)
    with EmulatedCluster(zk_server.connect_string + new_chroot(zk_server, "/verify"), spec) as c:
        c.create_topics({
            "clean": ({0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}, {0: 6 * BATCH_BYTES, 1: 3 * BATCH_BYTES}, None),
            "orders": ({0: [0, 1, 2]}, {0: 5 * BATCH_BYTES}, None),
            "lagging": ({0: [0, 1, 2]}, {0: 4 * BATCH_BYTES}, None),
        })
        yield c


def _run(capsys, *args):
    code = main(["verify-replicas", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_healthy_cluster_verifies_clean(cluster, capsys):
    code, out, err = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "clean",
                          "--time", "-2", "--report-interval-ms", "0")
    assert code == 0 and not err
    assert LINE_START.search(out)
    assert re.search(r": max lag is 0 for partition clean-\d at offset \d+ among 3 partitions$", out, re.M)
    assert "replicas match; 3 partitions, 9 replicas" in out
    assert f"{9 * BATCH_RECORDS} records compared" in out


def test_a_diverged_follower_record_is_found_and_named(cluster, capsys):
    cluster.corrupt_record("orders", 0, broker=2, offset=2 * BATCH_RECORDS + 5)
    code, out, _ = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "ord.*",
                        "--time", "-2")
    last = 3 * BATCH_RECORDS - 1
    assert code == 1
    assert re.search(rf": partition orders-0 has unmatched checksum at offset {last}; replica 0's checksum \d+; "
                     rf"replica 2's checksum \d+$", out, re.M)
    assert f"partition orders-0 has unmatched record at offset {2 * BATCH_RECORDS + 5}; replica 0 and replica 2 " \
           "differ in value" in out
    assert "2 MISMATCH(ES)" in out
    assert f"MISMATCH: partition orders-0 at offset {2 * BATCH_RECORDS + 5}: replica 0 vs replica 2" in out


def test_a_lagging_follower_shows_its_lag(cluster, capsys, zk_server):
    cluster.stall_replica("lagging", 0, 2)
    state = lambda: json.loads(cluster.tool_client.get("/brokers/topics/lagging/partitions/0/state")[0])  # noqa: E731
    assert cluster.wait_until(lambda: 2 not in state()["isr"], 30)
    cluster.set_partition_size("lagging", 0, 7 * BATCH_BYTES)
    code, out, _ = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "lagging",
                        "--time", "-2", "--max-wait-ms", "50")
    assert code == 0
    lag, at = 3 * BATCH_RECORDS, 4 * BATCH_RECORDS
    assert re.search(rf": max lag is {lag} for partition lagging-0 at offset {at} among 1 partitions$", out, re.M)
    assert f"lag: partition lagging-0: {lag} messages behind high watermark {7 * BATCH_RECORDS}" in out
    assert f"replica 2 at {at}" in out


@pytest.mark.parametrize("expire_after", [0.0, 3600.0])
def test_a_dead_broker_is_a_clear_error(zk_connect, capsys, expire_after):
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=50.0)
    with EmulatedCluster(zk_connect, spec) as c:
        c.create_topic("t", {0: [0, 1, 2]}, sizes={0: 2 * BATCH_BYTES})
        c.kill_broker(2, expire_after=expire_after)      # 3600: registration stays, nothing listens
        code, out, err = _run(capsys, "--broker-list", c.broker_list(), "--time", "-2", "--max-wait-ms", "200")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    if expire_after:
        assert re.search(r"^Error: broker 2 \(127\.0\.0\.1:\d+\) does not answer: connection refused", err)
    else:
        assert "partition t-0 has replicas on brokers [2] that are not live" in err


def test_a_silent_broker_is_an_error_within_the_wait_bound(capsys):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)                 # accepts connections, never answers
        code, _, err = _run(capsys, "--broker-list", f"127.0.0.1:{silent.getsockname()[1]}", "--max-wait-ms", "100")
    assert code == 2 and "did not answer within 1.1s" in err


@pytest.mark.parametrize("args, message", [
    (["--broker-list", "nohostport"], "--broker-list"),
    (["--broker-list", "h:1", "--topic-white-list", "a("], "--topic-white-list"),
    (["--broker-list", "h:1", "--fetch-size", "0"], "--fetch-size"),
    (["--broker-list", "h:1", "--time", "-7"], "--time"),
    (["--broker-list", "h:1", "--max-rounds", "0"], "--max-rounds"),
])
def test_bad_options_are_one_line_errors(capsys, args, message):
    code, out, err = _run(capsys, *args)
    assert code == 2 and err.startswith("Error: ") and message in err and len(err.strip().splitlines()) == 1


def test_no_matching_topic_is_a_clear_error(cluster, capsys):
    code, _, err = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "nothing.*")
    assert code == 2 and "No topics found" in err


def test_time_starts_at_the_first_record_at_or_after_the_timestamp(cluster, capsys):
    from kafka_sim.wire.records import timestamp_of
    at = 2 * BATCH_RECORDS
    code, out, _ = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "clean",
                        "--time", str(timestamp_of(at) - 1))
    assert code == 0
    assert f"{(6 - 2 + 3 - 2) * BATCH_RECORDS} records compared" in out     # clean-0 and -1 from offset 32
    code, out, _ = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "clean",
                        "--time", str(timestamp_of(10**6)))                  # after every record: latest
    assert code == 0 and " 0 records compared" in out
