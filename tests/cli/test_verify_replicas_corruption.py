"""``kafka-runbook verify-replicas`` on corrupt replicas served by the emulator over the Kafka
protocol: damaged bytes in a batch of every codec (the topic's compression.type: gzip, snappy,
lz4, zstd, uncompressed) and a garbled batch header are each exit 1 naming topic, partition,
replica and offset, never an internal error; the corrupt partition does not stop the topic's
other partitions from being verified to the end; the "max lag" line is never printed twice."""

import re

import pytest

from cli.main import main
from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.wire.records import BATCH_BYTES, BATCH_RECORDS
from tests.conftest import new_chroot

CODECS = ("gzip", "snappy", "lz4", "zstd", "uncompressed")
BATCHES = 4                     # per partition
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}


@pytest.fixture(scope="module")
def cluster(zk_server):
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=50.0)
    sizes = {p: BATCHES * BATCH_BYTES for p in ASSIGNMENT}
    topics = {f"{kind}-{codec}": (ASSIGNMENT, sizes, {"compression.type": codec})
              for kind in ("bytes", "header") for codec in CODECS}
    topics["clean"] = (ASSIGNMENT, sizes, {"compression.type": "gzip"})
    with EmulatedCluster(zk_server.connect_string + new_chroot(zk_server, "/verify-corrupt"), spec) as c:
        c.create_topics(topics)
        yield c


def _run(capsys, *args):
    code = main(["verify-replicas", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _no_crash(code, out, err):
    assert code == 1, (out, err)
    assert "internal error" not in out + err and "Traceback" not in out + err and not err


@pytest.mark.parametrize("codec", CODECS)
def test_damaged_bytes_in_a_batch_are_exit_1_naming_topic_partition_replica_and_offset(cluster, capsys, codec):
    topic = f"bytes-{codec}"
    at = 2 * BATCH_RECORDS + 3
    cluster.corrupt_record(topic, 0, broker=2, offset=at, how="bytes")
    code, out, err = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", topic,
                          "--time", "-2")
    _no_crash(code, out, err)
    last = 3 * BATCH_RECORDS - 1
    assert f": partition {topic}-0: replica 2's batch ending at offset {last} fails its CRC check" in out
    if codec in ("gzip", "snappy", "lz4", "uncompressed"):      # zstd decodes the flipped bytes to other values
        name = codec
        assert re.search(rf": partition {topic}-0: replica 2's data at offset {2 * BATCH_RECORDS} is corrupt: "
                         rf"its {name} batch's records cannot be read \(\w+", out), out
        assert f"  CORRUPT: partition {topic}-0 replica 2 at offset {2 * BATCH_RECORDS}: " in out
    else:
        assert f"partition {topic}-0 has unmatched record at offset" in out
    # every partition verified to the end, the damaged one too (the batch framing is intact)
    assert f"{3 * BATCHES} batches / {3 * BATCHES * BATCH_RECORDS} records compared" in out
    assert "  lag:" not in out and "stopped:" not in out


@pytest.mark.parametrize("codec", CODECS)
def test_a_garbled_batch_header_stops_only_its_partition(cluster, capsys, codec):
    topic = f"header-{codec}"
    cluster.corrupt_record(topic, 1, broker=0, offset=2 * BATCH_RECORDS, how="header")
    code, out, err = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", topic,
                          "--time", "-2", "--report-interval-ms", "0")
    _no_crash(code, out, err)
    at = 2 * BATCH_RECORDS
    assert re.search(rf": partition {topic}-1: replica 0's data at offset {at} is corrupt: its batch length \d+ "
                     r"runs past the end of the replica's log", out), out
    assert f"1 MISMATCH(ES)" in out
    assert f"  stopped: partition {topic}-1 verified up to offset {at}: replica 0's data at offset {at} is corrupt" in out
    # the topic's other partitions: fetched and verified to their high watermark, no lag shown
    assert f"{3 * BATCHES - 2} batches / {(3 * BATCHES - 2) * BATCH_RECORDS} records compared" in out
    assert "  lag:" not in out
    rounds = int(re.search(r", (\d+) rounds,", out).group(1))
    lag_lines = re.findall(r": (max lag is .*)$", out, re.M)
    assert len(lag_lines) == rounds                      # one a round, none repeated at the end


def test_the_max_lag_line_is_printed_once_at_the_end_when_no_round_printed_it(cluster, capsys):
    code, out, _ = _run(capsys, "--broker-list", cluster.broker_list(), "--topic-white-list", "clean",
                        "--time", "-2", "--report-interval-ms", "3600000")
    assert code == 0 and "replicas match" in out
    assert len(re.findall(r": max lag is 0 for partition clean-\d at offset \d+ among 3 partitions$", out, re.M)) == 1
    assert f"{3 * BATCHES * BATCH_RECORDS} records compared" in out       # compressed batches verify clean
