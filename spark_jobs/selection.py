"""Which partitions a plan operation must see one by one: the same choice for Spark and the driver.

A :class:`Selection` names the partitions the kernel needs as objects (the *touched* ones);
every other partition only counts in the per-broker baseline. It is written once and read two
ways, so the Spark path and the in-driver path cannot disagree: :meth:`Selection.sql` is the
Spark SQL predicate (:mod:`spark_jobs.spark_io`), :meth:`Selection.mask` the same test over
Arrow columns (:mod:`spark_jobs.driver_io`), :meth:`Selection.picks` over one partition (which
states ``kafka-runbook plan --zookeeper`` reads).

* ``Selection.every()``: all partitions (add-brokers, rebalance, a decommission allowed to move
  other replicas, ...);
* ``Selection.on_brokers(ids)``: a replica on one of ``ids`` (a decommission's partitions);
* ``Selection.of_topics(names)``: the partitions of those topics.

Failure: none; the ids and names were checked by the caller (:mod:`spark_jobs.operations`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence


@dataclass(frozen=True)
class Selection:
    """All partitions (both fields None), those with a replica on ``brokers``, or those of ``topics``."""

    brokers: tuple[int, ...] | None = None
    topics: tuple[str, ...] | None = None

    @classmethod
    def every(cls) -> "Selection":
        return cls()

    @classmethod
    def on_brokers(cls, ids: Iterable[int]) -> "Selection":
        return cls(brokers=tuple(sorted({int(b) for b in ids})))

    @classmethod
    def of_topics(cls, names: Iterable[str]) -> "Selection":
        return cls(topics=tuple(sorted(set(names))))

    @functools.cached_property
    def _broker_set(self) -> frozenset[int]:
        return frozenset(self.brokers or ())

    @property
    def is_all(self) -> bool:
        return self.brokers is None and self.topics is None

    def sql(self) -> str | None:
        """The Spark SQL predicate over a snapshot row (None: every partition)."""
        if self.brokers is not None:
            ids = ",".join(str(b) for b in self.brokers)
            return f"arrays_overlap(replicas, array({ids}))" if ids else "false"
        if self.topics is not None:
            if not self.topics:
                return "false"
            quoted = ",".join("'" + n.replace("\\", "\\\\").replace("'", "\\'") + "'" for n in self.topics)
            return f"topic IN ({quoted})"
        return None

    def picks(self, topic: str, replicas: Iterable[int]) -> bool:
        """The same test for one partition in Python (which partition states a plan reads)."""
        if self.brokers is not None:
            return not self._broker_set.isdisjoint(replicas)
        if self.topics is not None:
            return topic in self.topics
        return True

    def picker(self) -> Callable[[str, Sequence[int]], bool]:
        """:meth:`picks` as the cheapest callable for this selection (one call per partition, 10⁶
        of them at the largest clusters: a broker selection is one ``frozenset.isdisjoint``)."""
        if self.brokers is not None:
            on = self._broker_set.isdisjoint
            return lambda _topic, replicas: not on(replicas)
        return self.picks

    def mask(self, topics, replicas):
        """A numpy bool array: which rows of the Arrow columns ``topics`` (string) and ``replicas``
        (list of int) are selected. Rows with no replicas are selected only by topic."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(topics)
        if self.brokers is not None:
            chosen = np.zeros(n, dtype=bool)
            if not self.brokers or n == 0:
                return chosen
            if isinstance(replicas, pa.ChunkedArray):
                replicas = replicas.combine_chunks()
            flat = pc.list_flatten(replicas)
            hits = pc.is_in(flat, value_set=pa.array(self.brokers, pa.int64())).to_numpy(zero_copy_only=False)
            parents = pc.list_parent_indices(replicas).to_numpy(zero_copy_only=False)
            chosen[parents[hits]] = True
            return chosen
        if self.topics is not None:
            picked = pc.is_in(topics, value_set=pa.array(self.topics, pa.string()))
            return pc.fill_null(picked, False).to_numpy(zero_copy_only=False)
        return np.ones(n, dtype=bool)
