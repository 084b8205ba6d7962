"""Max-min fair rates by progressive filling: the replication model's sharing rule (pure).

A flow (one follower copying from its leader) is limited by each resource key it uses
(``("out"|"in"|"lthr"|"fthr", broker)``: a broker's network out and in, its leader and follower
replication throttles); a key absent from the caps is unlimited, and a flow that uses no capped
key gets ``math.inf``. :func:`allocate` is the plain definition, one rate per flow.
:func:`allocate_classes` gives the same rates for flows grouped by the keys they use: flows with
the same keys get the same max-min fair rate, so a wave of thousands of moves between a few
dozen brokers is shared out once per (leader, follower, throttled?) class, weighted by how many
flows are in it (:class:`kafka_sim.replication.ReplicationModel` uses it; the property test
``tests/kafka_sim/test_replication_incremental.py`` pins the two against each other).
Nothing here fails on valid input; negative remaining capacity (a float's rounding) counts as 0.
"""

from __future__ import annotations

import heapq
import math
from typing import Mapping, NamedTuple

from kafka_zk.codecs import TopicPartition

Key = tuple[str, int]
Keys = tuple[Key, ...]


class Flow(NamedTuple):
    """One follower copying from its leader, limited by every key (``("out"|"in"|"lthr"|"fthr",
    broker)``). A tuple: a wave builds one per copying replica (thousands in a large wave)."""

    tp: TopicPartition
    leader: int
    follower: int
    keys: Keys


def allocate(flows: list[Flow], caps: Mapping[Key, float]) -> list[float]:
    """Max-min fair rates by progressive filling; a key absent from ``caps`` is unlimited."""
    rates = [0.0] * len(flows)
    users: dict[Key, list[int]] = {}
    for i, f in enumerate(flows):
        for k in f.keys:
            if k in caps:
                users.setdefault(k, []).append(i)
    remaining = dict(caps)
    count = {k: len(us) for k, us in users.items()}
    active = set(range(len(flows)))
    while active:
        best_key, best_share = None, math.inf
        for k, n in count.items():          # keys whose users are all set are dropped below
            share = max(0.0, remaining[k]) / n
            if share < best_share:
                best_key, best_share = k, share
        if best_key is None:
            for i in active:
                rates[i] = math.inf
            break
        for i in [i for i in users[best_key] if i in active]:
            rates[i] = best_share
            active.discard(i)
            for k in flows[i].keys:
                if k in remaining:
                    remaining[k] -= best_share
                    count[k] -= 1
                    if not count[k]:
                        del count[k]
    return rates


def allocate_classes(counts: Mapping[Keys, int], caps: Mapping[Key, float],
                     keep: Mapping[Keys, float] | None = None, below: float = 0.0) -> dict[Keys, float]:
    """:func:`allocate` for ``counts[keys]`` flows using ``keys`` each: one rate per class.

    The key to fill next comes off a heap of (fair share, key) whose stale entries (a key's
    share changes when a class through it is set) are skipped, so a fill costs
    O((keys + classes × keys per class) · log) rather than keys² scans.

    ``keep``/``below``: the rates of the last sharing, when since then flows only *left* (no
    class grew, no cap moved) and ``below`` is the lowest old rate among the classes that lost
    flows. Progressive filling below that level is then what it was — a flow that left was still
    growing there, and none of its keys had filled (else it would have stopped lower) — so every
    class kept below ``below`` keeps its rate: its use is taken off its keys and only the other
    classes are filled again. The same rates as a fill from scratch (pinned by a property test)."""
    users: dict[Key, list[Keys]] = {}
    count: dict[Key, int] = {}
    rates: dict[Keys, float] = {}
    taken: dict[Key, float] = {}
    # the same arithmetic in the same order as the plain loop it replaced (equal rates to the bit:
    # BENCHMARKS.md, "rehearsal speed, third pass"); names bound once: it runs at every catch-up
    keep_get = keep.get if keep is not None else None
    taken_get, count_get, users_get = taken.get, count.get, users.get
    for cls, n in counts.items():
        if n <= 0:
            continue
        if keep_get is not None:
            old = keep_get(cls)
            if old is not None and old < below:
                rates[cls] = old
                use = old * n
                for k in cls:
                    if k in caps:
                        taken[k] = taken_get(k, 0.0) + use
                continue
        for k in cls:
            if k in caps:
                us = users_get(k)
                if us is None:
                    users[k] = [cls]
                else:
                    us.append(cls)
                count[k] = count_get(k, 0) + n
    remaining = {k: float(caps[k]) - taken_get(k, 0.0) for k in count}
    heap = [(max(0.0, remaining[k]) / n, k) for k, n in count.items()]
    heapq.heapify(heap)
    heappop, heappush = heapq.heappop, heapq.heappush
    while heap:
        share, key = heappop(heap)
        n = count_get(key)
        if not n:
            continue                         # stale: the key is done
        left = remaining[key]
        if share != (left if left > 0.0 else 0.0) / n:
            continue                         # stale: its share moved since
        touched: set[Key] = set()
        for cls in users[key]:
            if cls in rates:
                continue
            rates[cls] = share
            m = counts[cls]
            for k in cls:
                c = count_get(k)
                if c is not None:
                    remaining[k] -= share * m
                    c -= m
                    if c:
                        count[k] = c
                        touched.add(k)
                    else:
                        del count[k]
                        touched.discard(k)
        for k in touched:
            c = count_get(k)
            if c is not None:
                left = remaining[k]
                heappush(heap, ((left if left > 0.0 else 0.0) / c, k))
    for cls, n in counts.items():
        if n > 0 and cls not in rates:
            rates[cls] = math.inf
    return rates
