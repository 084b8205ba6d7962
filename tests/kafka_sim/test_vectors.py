"""Replay of the real Kafka 2.4.1 recordings: same distinct states per watched znode."""

from __future__ import annotations

import pytest

from tests.kafka_sim.replay import (ABSENT, Poller, Replayer, expected_sequences, is_subsequence, load,
                                    read_tree)

SPEED = 10.0
SIZES = {"e-2": {("te2", 0): 10_000_000}}      # "~10 MB" (the description); other topics had no data


@pytest.mark.parametrize("name", ["a", "b-i", "b-ii", "b-vi", "d", "e-1", "e-2", "e-3", "f"])
def test_vector_replay(name, make_cluster, zk):
    vector = load(name)
    brokers = {int(b): v["rack"] for b, v in vector["cluster"]["brokers"].items()} \
        if "brokers" in vector["cluster"] else {0: "a", 1: "b", 2: "a", 3: "b"}
    cluster = make_cluster(brokers=brokers, speed=SPEED)
    replay = Replayer(cluster, zk, vector, SPEED)
    replay.setup(SIZES.get(name))
    expected = expected_sequences(vector)
    initial = read_tree(zk, replay.topics)
    assert initial == {p: seq[0] for p, seq in expected.items() if seq[0] != ABSENT}, \
        "the seeded starting point differs from the recording's first snapshot"
    poller = Poller(zk, replay.topics).start()
    replay.run()
    assert cluster.wait_idle(30)
    observed = poller.stop()
    actual = replay.actual_sequences(initial)
    # an action whose recorded preceding tree never appeared was performed anyway (replay.py)
    unmet = f"; actions performed without the recorded tree before them: {replay.unmet}" if replay.unmet else ""
    for path in sorted(set(expected) | set(actual)):
        assert actual.get(path, [ABSENT]) == expected.get(path, [ABSENT]), path + unmet
    final = read_tree(zk, replay.topics)
    for path, seq in actual.items():
        assert final.get(path, ABSENT) == seq[-1], path + unmet
        assert is_subsequence(observed.get(path, [seq[0]]), seq), f"{path}: polled {observed.get(path)}{unmet}"
    assert not replay.unmet, f"the replay waited in vain for the recorded tree before: {replay.unmet}"
