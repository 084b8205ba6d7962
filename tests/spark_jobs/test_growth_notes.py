"""The plan's growth notes give each growing broker's actual cause, with numbers: an under-loaded
broker is not blamed on its rack (issue 30), a rack that loses brokers is."""

from __future__ import annotations

from kafka_zk.codecs import TopicPartition
from planning.kernels.capacity import plan_disk
from planning.kernels.decommission import plan_decommission
from planning.kernels.loads import cluster_loads, rack_map
from planning.kernels.waves import WaveLimits, pack_waves
from tests.spark_jobs.conftest import literal_cluster

GIB = 1024 ** 3


def _notes(snap, sizes, removed: list[int]) -> list[str]:
    plan = plan_decommission(snap, removed, sizes)
    brokers = sorted(snap.brokers)
    limits = WaveLimits(max_moves_per_broker=5)
    before = cluster_loads(snap.partitions(), brokers, sizes).bytes
    _, disk = plan_disk(before, brokers, removed, rack_map(snap.brokers), pack_waves(plan.moves, limits),
                        None, True, limits)
    return disk["growth_notes"]


def test_an_under_loaded_broker_is_explained_by_its_load_not_by_its_rack() -> None:
    # RF 2, one replica in each rack; broker 1 (rack a) holds 1 replica, brokers 2-5 of rack a 10 each
    racks = {1: "a", 2: "a", 3: "a", 4: "a", 5: "a", 6: "b", 7: "b", 8: "b", 9: "b", 10: "b"}
    parts = {0: (1, 6)}
    parts.update({p: (2 + (p - 1) % 4, 6 + p % 5) for p in range(1, 41)})
    snap = literal_cluster({"t": parts}, racks)
    sizes = {TopicPartition("t", p): GIB for p in parts}
    notes = _notes(snap, sizes, [5])
    assert len(notes) == 1, notes
    note = notes[0]
    assert note.startswith("Broker 1 grows 10.0x (1.0 GiB -> 10.0 GiB): it was under-loaded: 1.0 GiB before "
                           "against a mean of 10.0 GiB on the 3 other broker(s) of rack a"), note
    assert "ends near their mean after (10.3 GiB)" in note
    assert "keeps" not in note and "leave" not in note      # rack a's kept brokers grow 1.3x: not the cause
    assert note.endswith("its capacity is unknown.")


def test_a_rack_left_with_one_broker_is_the_cause_with_the_bytes_it_takes() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    parts = {p: ((1, 2)[p % 2], (3, 4)[(p // 2) % 2], (5, 6)[(p // 4) % 2]) for p in range(8)}
    snap = literal_cluster({"t": parts}, racks)
    sizes = {TopicPartition("t", p): GIB for p in parts}
    notes = _notes(snap, sizes, [2])
    assert notes == ["Broker 1 grows 2.0x (4.0 GiB -> 8.0 GiB): rack a keeps 1 broker while broker 2 leaves it, "
                     "and rack-aware placement keeps each partition's replica in its rack, so the kept broker "
                     "of that rack takes those replicas (4.0 GiB): it grows 2.0x (4.0 GiB -> 8.0 GiB); "
                     "its capacity is unknown."]


def test_brokers_leaving_a_rack_are_named_as_brokers_never_read_as_a_count() -> None:
    racks = {1: "a", 2: "a", 3: "b", 6: "b", 4: "c", 5: "c", 7: "c"}
    parts = {p: ((1, 2)[p % 2], (3, 6)[p % 2], (4, 5, 7)[p % 3]) for p in range(12)}
    snap = literal_cluster({"t": parts}, racks)
    sizes = {TopicPartition("t", p): GIB for p in parts}
    notes = _notes(snap, sizes, [4, 5])
    assert any("rack c keeps 1 broker while brokers 4, 5 leave it, and rack-aware placement keeps each "
               "partition's replica in its rack, so the kept broker of that rack takes those replicas" in n
               for n in notes), notes
