"""The iteration orders of the JVM collections Kafka 2.4.1 prints from, reproduced exactly.

Kafka's tools and controller print or act in the order their hash maps iterate, not sorted.
To match Kafka 2.4.1 byte for byte, this module replays those collections:

* :func:`java_string_hash` — ``String.hashCode()`` over UTF-16 code units, as a signed int32.
* :func:`java8_properties_order` — a ``java.util.Properties`` filled in the given order, as on
  Java 8 (a ``Hashtable``: 11 buckets, rehash to ``2n+1`` when the count reaches 0.75·n before an
  insert, new entries at the head of their chain, iteration from the last bucket down).
* :func:`java11_properties_order` — the same on Java 9+ (11, 17...), where ``Properties`` keeps its
  entries in a ``ConcurrentHashMap(8)``: 16 bins, bin ``(h ^ (h >>> 16)) & 0x7fffffff & (n-1)``,
  new entries at the tail of their bin, the table doubled once the count reaches 0.75·n after an
  insert (a bin split as ``transfer`` does: the nodes before the bin's last run are pushed at
  the head of their new bin, so their order reverses; the last run keeps its order), iteration
  by ascending bin. Tree bins (8+ keys in one bin) are not modelled. Checked against a real
  JVM by tests/kafka_zk/test_java_order.py.
* :func:`java_hashmap_order` — a ``java.util.HashMap`` filled in the given order (Java 8+:
  bucket ``(h ^ (h >>> 16)) & (n-1)``, 16 buckets doubling when the size exceeds 0.75·n, a
  resize keeps each bucket's relative order, iteration by ascending bucket). Tree bins (8+
  keys in one bucket of a 64+ table) are not modelled.
* :func:`scala213_hashmap_order` — a Scala 2.13.1 ``mutable.HashMap`` (see the function), with
  :func:`topic_partition_hash` for Kafka's ``TopicPartition`` keys. Kafka 2.4.1's default and
  recommended build uses Scala 2.12, whose ``mutable.HashMap`` (a HashTable with a seeded
  byte-swapped index, iterated from the last bucket down) orders differently; not modelled.

Pure functions of their inputs; nothing here fails on any string or int input.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    """``s.hashCode()`` in Java (UTF-16 code units, so characters past U+FFFF count twice)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def spread(h: int) -> int:
    """``h ^ (h >>> 16)`` on the unsigned 32-bit pattern (HashMap's and Scala 2.13's improve)."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def _bucketed_order(keys: Sequence[K], hash_of: Callable[[K], int], initial_capacity: int) -> list[K]:
    """Insertion into a power-of-two table that doubles past 0.75 load, iterated by ascending bucket.

    Resizing keeps the relative order of the keys that share a bucket, so the final order is:
    bucket at the final capacity, ties in insertion order.
    """
    unique = list(dict.fromkeys(keys))
    capacity = initial_capacity
    while len(unique) > capacity * 0.75:
        capacity *= 2
    indexed = [(spread(hash_of(k)) & (capacity - 1), i, k) for i, k in enumerate(unique)]
    return [k for _, _, k in sorted(indexed, key=lambda t: (t[0], t[1]))]


def java_hashmap_order(keys: Iterable[str], initial_capacity: int = 16) -> list[str]:
    """Iteration order of a ``java.util.HashMap<String, ?>`` after putting ``keys`` in order."""
    return _bucketed_order(list(keys), java_string_hash, initial_capacity)


def java8_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a Java 8 ``Properties`` after ``setProperty`` of ``keys`` in order."""
    capacity, threshold = 11, int(11 * 0.75)
    table: list[list[str]] = [[] for _ in range(capacity)]
    count = 0
    seen: set[str] = set()

    def index(key: str, n: int) -> int:
        return (java_string_hash(key) & 0x7FFFFFFF) % n

    for key in keys:
        if key in seen:          # setProperty on an existing key replaces the value in place
            continue
        seen.add(key)
        if count >= threshold:   # Hashtable.addEntry: rehash before inserting
            old = table
            capacity = capacity * 2 + 1
            threshold = int(capacity * 0.75)
            table = [[] for _ in range(capacity)]
            for chain in reversed(old):            # old buckets from the last one down
                for k in chain:                    # each chain head first, pushed at the new head
                    table[index(k, capacity)].insert(0, k)
        table[index(key, capacity)].insert(0, key)
        count += 1
    return [k for chain in reversed(table) for k in chain]


def java11_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a Java 9+ ``Properties`` after ``setProperty`` of ``keys`` in order."""
    n, threshold = 16, 12
    table: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    count = 0
    for key in keys:
        h = spread(java_string_hash(key)) & 0x7FFFFFFF
        chain = table[h & (n - 1)]
        if any(k == key for _, k in chain):      # setProperty on an existing key replaces the value in place
            continue
        chain.append((h, key))
        count += 1
        if count >= threshold:                   # addCount: transfer to a table twice as large
            grown: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
            for i, old in enumerate(table):
                if not old:
                    continue
                last = 0                         # where the bin's last run (same new bin) starts
                for j in range(1, len(old)):
                    if old[j][0] & n != old[last][0] & n:
                        last = j
                low = list(old[last:]) if old[last][0] & n == 0 else []
                high = list(old[last:]) if old[last][0] & n else []
                for node in old[:last]:
                    (high if node[0] & n else low).insert(0, node)
                grown[i], grown[i + n] = low, high
            table, n, threshold = grown, 2 * n, (2 * n) - (n >> 1)
    return [k for chain in table for _, k in chain]


def scala213_hashmap_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """Iteration order of a Scala 2.13.1 ``mutable.HashMap`` after putting ``keys`` in order.

    As scala/collection/mutable/HashMap.scala at v2.13.1 (the Scala of Kafka 2.4.1's 2.13
    build): 16 buckets; before each insert, the table doubles when ``size + 1 >= (int)(0.75 ·
    buckets)`` (so 12 keys already use 32 buckets); bucket ``improved & (n-1)`` with
    ``improved = h ^ (h >>> 16)``; a bucket's nodes are kept sorted by the improved hash as a
    signed int (``put0`` walks while ``node.hash <= hash``, so equal hashes keep insertion
    order); a resize splits buckets keeping that order; iteration goes by ascending bucket.
    """
    unique = list(dict.fromkeys(keys))
    capacity = 16
    for size in range(len(unique)):
        if size + 1 >= int(capacity * 0.75):
            capacity *= 2
    keyed = []
    for i, k in enumerate(unique):
        improved = to_int32(spread(hash_of(k)))
        keyed.append((improved & (capacity - 1), improved, i, k))
    return [t[3] for t in sorted(keyed, key=lambda t: (t[0], t[1], t[2]))]


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's ``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` (int32)."""
    return to_int32(31 * (31 + partition) + java_string_hash(topic))
