"""The 2.4.1 controller starts a document's partitions in its HashMap's order (issue 11, item a).

Behaviour pinned (Kafka 2.4.1's Scala 2.13 build): the entries go into a Scala ``mutable.HashMap``
keyed by TopicPartition, hash ``31 * (31 + partition) + topic.hashCode()``, bucket
``(h ^ (h >>> 16)) & (capacity - 1)``, 16 buckets doubling as the map fills, buckets in
ascending order. Worked by hand for topic "t" (hashCode 116): partition p hashes to 1077 + 31p,
so with 16 buckets p0..p3 fall in buckets 5, 4, 3, 2 (order p3, p2, p1, p0), and 12 keys use 32
buckets, where p0..p11 fall in buckets 21, 20, ..., 10 (order p11 ... p0).
"""

from __future__ import annotations

from tests.kafka_sim.zk_read import create_json, wait_for

NODE = "/admin/reassign_partitions"


def _start_order_since(cluster, mark: int, topics: set[str]) -> list[tuple[str, int]]:
    """Partitions in the order of the controller's first state write for each after ``mark``."""
    seen: list[tuple[str, int]] = []
    for w in cluster.journal()[mark:]:
        parts = w.path.split("/")
        if w.writer != "tool" and len(parts) == 7 and parts[5].isdigit() and parts[6] == "state" \
                and parts[3] in topics and (parts[3], int(parts[5])) not in seen:
            seen.append((parts[3], int(parts[5])))
    return seen


def _request_and_wait(cluster, zk, entries: list[tuple[str, int]], target: list[int]) -> None:
    before = len(cluster.journal())
    create_json(zk, NODE, {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": target} for t, p in entries]})
    wait_for(lambda: len({w.path for w in cluster.journal()[before:] if w.path.endswith("/state")})
             >= len(entries), what="every partition started")


def test_twelve_partitions_start_in_the_32_bucket_order_not_document_order(make_cluster, zk):
    cluster = make_cluster(brokers={0: None, 1: None}, speed=1.0)
    cluster.create_topic("t", {p: [0] for p in range(12)}, sizes={p: 10 ** 12 for p in range(12)})
    cluster.wait_idle(timeout=20)
    mark = len(cluster.journal())
    _request_and_wait(cluster, zk, [("t", p) for p in range(12)], [0, 1])
    order = _start_order_since(cluster, mark, {"t"})
    assert order == [("t", p) for p in range(11, -1, -1)]


def test_two_topics_and_a_shared_bucket(make_cluster, zk):
    """a-1, a-0, b-0 hash to 1089, 1058, 1059 (buckets 1, 2, 3); t-0 and t-16 share bucket 5 and
    come out by hash (1077 before 1573) whatever the document says."""
    cluster = make_cluster(brokers={0: None, 1: None}, speed=1.0)
    cluster.create_topics({"a": ({0: [0], 1: [0]}, {0: 10 ** 12, 1: 10 ** 12}, None),
                           "b": ({0: [0]}, {0: 10 ** 12}, None),
                           "t": ({p: [0] for p in range(17)}, {p: 10 ** 12 for p in range(17)}, None)})
    cluster.wait_idle(timeout=20)
    mark = len(cluster.journal())
    _request_and_wait(cluster, zk, [("t", 16), ("b", 0), ("a", 0), ("t", 0), ("a", 1)], [0, 1])
    assert _start_order_since(cluster, mark, {"a", "b", "t"}) == [("a", 1), ("a", 0), ("b", 0), ("t", 0), ("t", 16)]

