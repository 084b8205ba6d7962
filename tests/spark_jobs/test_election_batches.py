"""The demotion re-order batcher counts each entry once and still cuts exactly where the encoded
payload would pass the limit: every batch fits, and none could take the next partition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_zk.codecs import TopicPartition
from planning.election import payload_bytes, reorder_batches


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.tuples(st.sampled_from(["a", "topic-x", "ü-topic", "t" * 40]), st.integers(0, 99999)),
                       st.lists(st.integers(0, 100000), min_size=1, max_size=5, unique=True), min_size=1,
                       max_size=60),
       st.integers(60, 2000))
def test_batches_fit_the_limit_and_are_cut_as_late_as_possible(entries, max_bytes) -> None:
    targets = {TopicPartition(t, p): tuple(r) for (t, p), r in entries.items()}
    batches = reorder_batches(targets, max_bytes)
    assert [tp for b in batches for tp in b] == sorted(targets)          # every partition once, in order
    for k, batch in enumerate(batches):
        assert len(batch) == 1 or payload_bytes(batch) <= max_bytes
        if k + 1 < len(batches):
            nxt = next(iter(batches[k + 1]))
            assert payload_bytes({**batch, nxt: targets[nxt]}) > max_bytes


def test_two_thousand_partitions_batch_in_well_under_a_second_of_work() -> None:
    targets = {TopicPartition(f"topic-{i // 100:04d}", i % 100): (i % 7, (i + 1) % 7, (i + 2) % 7)
               for i in range(2000)}
    batches = reorder_batches(targets, 4096)
    assert sum(len(b) for b in batches) == 2000 and all(payload_bytes(b) <= 4096 for b in batches)
