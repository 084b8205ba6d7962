"""The plan checker's columnar pass: proves a large plan valid over numpy arrays, or defers.

:func:`planning.kernels.validate.plan_violations` checks a plan move by move in Python and
names every violation; at 10⁶ partitions (263,615 moves) that took ~3.5 s of CPU for a plan
that is valid every time. :func:`surely_valid` checks the same rules at once over arrays made
from the moves and the snapshot's replica lists (current and target replicas as padded
``moves × RF`` matrices of broker codes, racks as codes, final replica and leader counts by
``numpy.add.at``) and answers True only when no rule can be broken. Whenever it cannot tell —
any rule fails, an input it does not model (change-rf, extra moves, disk limits, a negative
broker id, an empty replica list), or the balance rule would need its per-move search — it
answers False and :func:`~planning.kernels.validate.validate_plan` runs the per-move checker,
which then names the violations (or finds none). So the outcome and every message are the
per-move checker's; only the time differs. ``tests/spark_jobs/test_validate_columns.py`` pins,
on random plans and broken ones, that True implies the per-move checker finds nothing.

Pure (no I/O). Failure: none of its own; False is the answer to anything unexpected.
"""

from __future__ import annotations

from itertools import chain
from typing import Collection, Mapping

import numpy as np

from kafka_zk.model import ClusterSnapshot
from planning.model import BrokerLoad, Plan
from planning.kernels.loads import rack_map, rack_of
from planning.kernels.move_columns import PAD, flat, id_coder, padded
from planning.kernels.validate import BALANCED, RF_CHANGING



def _distinct(matrix: np.ndarray) -> np.ndarray:
    """Per row, how many distinct non-pad values it holds."""
    s = np.sort(matrix, axis=1)
    first = (s[:, :1] >= 0).sum(axis=1)
    return first + ((s[:, 1:] != s[:, :-1]) & (s[:, 1:] >= 0)).sum(axis=1)


def _named_right(moves, topics, target_map) -> bool:
    """Every move names a partition of ``topics`` whose replicas are its current list, and the
    plan's target map gives its target (moves come in topic order: a topic is looked up once)."""
    name = parts = None
    try:
        for m in moves:
            tp = m.tp
            if tp[0] != name:
                name = tp[0]
                parts = topics[name].partitions
            if parts[tp[1]].replicas != m.current or target_map[tp] != m.target:
                return False
    except KeyError:
        return False
    return True


def surely_valid(snapshot: ClusterSnapshot, plan: Plan, removed: Collection[int] = (),
                 baseline: Mapping[int, BrokerLoad] | None = None,
                 limits: Mapping[int, int] | None = None) -> bool:
    """True only if :func:`~planning.kernels.validate.plan_violations` would find nothing
    (the same ``removed``, ``baseline``, ``limits``; sizes matter only with limits, which defer);
    False: not shown here, run the per-move checker."""
    moves = plan.moves
    op = plan.operation
    extra = bool(plan.params.get("extra_moves"))
    if not moves or limits or extra or op == "change-rf" or len(plan.target) != len(moves):
        return False
    # rule 1 and the target map: each move names a partition of the snapshot, with its replicas
    topics = snapshot.topics
    if not _named_right(moves, topics, plan.target):
        return False
    gone = frozenset(int(b) for b in removed) | plan.removed
    cur_len, cur_flat = flat([m.current for m in moves])
    tgt_len, tgt_flat = flat([m.target for m in moves])
    reps = [p.replicas for t in topics.values() for p in t.partitions.values()]
    rep_len, rep_flat = flat(reps)
    if not cur_len.all() or not tgt_len.all():
        return False                # an empty list: the per-move checker names it
    brokers = snapshot.brokers
    every = np.concatenate([cur_flat, tgt_flat, rep_flat,
                            np.fromiter(chain(brokers, baseline or (), gone), dtype=np.int64)])
    if every.size and every.min() < 0:
        return False
    ids = np.unique(np.fromiter(set(every.tolist()), dtype=np.int64))   # broker id -> code: its index here
    code = id_coder(ids)
    id_list = ids.tolist()
    is_gone = np.fromiter((b in gone for b in id_list), dtype=bool, count=len(id_list))
    is_live = np.fromiter((b in brokers and b not in gone for b in id_list), dtype=bool, count=len(id_list))
    racks = rack_map(brokers)
    rack_names = [rack_of(racks, b) for b in id_list]
    rack_index = {r: i for i, r in enumerate(sorted(set(rack_names)))}
    rack_code = np.fromiter((rack_index[r] for r in rack_names), dtype=np.int64, count=len(id_list))
    width = int(max(cur_len.max(), tgt_len.max()))
    cur = padded(cur_len, code(cur_flat), width)
    tgt = padded(tgt_len, code(tgt_flat), width)
    real_t = tgt >= 0
    # rule 2: no broker twice in a target
    st = np.sort(tgt, axis=1)
    if ((st[:, 1:] == st[:, :-1]) & (st[:, 1:] >= 0)).any():
        return False
    # rule 3: replication factor kept
    if op not in RF_CHANGING and not np.array_equal(cur_len, tgt_len):
        return False
    # rule 4: no target keeps a removed broker
    if is_gone[tgt[real_t]].any():
        return False
    # rule 5: destinations (target brokers not in current) are live brokers
    dest = real_t & ~(tgt[:, :, None] == cur[:, None, :]).any(axis=2)
    if not is_live[tgt[dest]].all():
        return False
    # rule 6: rack spread
    allowed = len({rack_of(racks, b) for b in brokers if b not in gone})
    cur_racks = np.where(cur >= 0, rack_code[np.maximum(cur, 0)], PAD)
    tgt_racks = np.where(real_t, rack_code[np.maximum(tgt, 0)], PAD)
    need = np.minimum(np.minimum(_distinct(cur_racks), tgt_len), allowed)
    if (_distinct(tgt_racks) < need).any():
        return False
    # rule 7 (decommission): each moved partition gains exactly as many replicas as it had on removed
    # brokers, and every partition with one is moved (moves name distinct snapshot partitions)
    real_c = cur >= 0
    on_gone = (is_gone[np.maximum(cur, 0)] & real_c).sum(axis=1)
    if op == "decommission":
        if not np.array_equal(dest.sum(axis=1), on_gone):
            return False
        rep_codes = code(rep_flat)
        parents = np.repeat(np.arange(len(reps)), rep_len)
        if int((np.bincount(parents[is_gone[rep_codes]], minlength=len(reps)) > 0).sum()) != int((on_gone > 0).sum()):
            return False
    # rule 8: final counts and preferred leaders (the assignment with the moves applied)
    if op in BALANCED:
        cands = sorted(b for b in brokers if b not in gone)
        if not cands:
            return True
        counts = np.zeros(len(id_list), dtype=np.int64)
        leaders = np.zeros(len(id_list), dtype=np.int64)
        rep_codes = code(rep_flat)
        np.add.at(counts, rep_codes, 1)
        starts = np.concatenate([[0], np.cumsum(rep_len)[:-1]])[rep_len > 0]
        np.add.at(leaders, rep_codes[starts], 1)
        np.add.at(counts, cur[real_c], -1)
        np.add.at(counts, tgt[real_t], 1)
        np.add.at(leaders, cur[:, 0], -1)
        np.add.at(leaders, tgt[:, 0], 1)
        if baseline:
            at = code(np.fromiter(baseline, dtype=np.int64, count=len(baseline)))
            counts[at] += np.fromiter((x.replicas for x in baseline.values()), dtype=np.int64, count=len(at))
            leaders[at] += np.fromiter((x.leaders for x in baseline.values()), dtype=np.int64, count=len(at))
        low = int(counts[code(np.array(cands, dtype=np.int64))].min())
        if op == "decommission" and dest.any() and int(counts[tgt[dest]].max()) > low + 1:
            return False            # the per-move search for a broker that could have taken a replica
        lead = tgt[:, 0]
        changed = (lead != cur[:, 0]) & (tgt_len >= 2)
        bar = leaders[lead] - 1
        for j in range(1, width):
            r = tgt[:, j]
            real = r >= 0
            rr = np.maximum(r, 0)
            if (changed & real & is_live[rr] & (leaders[rr] < bar)).any():
                return False
    return True
