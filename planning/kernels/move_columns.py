"""The plan summary's per-broker sums over numpy arrays of the moves, for large plans.

The summary and the disk profile add up, per broker, the bytes each move sends and receives
(:func:`planning.kernels.waves.wave_bounds`, :func:`~planning.kernels.waves.fixed_batch_bounds`),
the replicas and preferred leaderships it moves (:func:`planning.kernels.loads.moved_loads`)
and, wave by wave, the disk each broker fills and frees
(:func:`planning.kernels.capacity.disk_profile`). In Python that is a dictionary update per
replica of every move: ~2.2 s of CPU for the 263,615 moves of a 10⁶-partition decommission.
Here the moves become flat arrays once (sizes, copy-from leaders, destination, current, target
and source lists with their lengths) and each sum is one ``numpy.add.at`` on integer arrays:
the same integers (int64; byte totals stay far below 2⁶³), so the summary is unchanged. The
callers use these from :data:`planning.kernels.waves.COLUMNAR_MIN_MOVES` moves (below, numpy's import costs more);
``tests/spark_jobs/test_move_columns.py`` compares each with the plain computation.

Pure (no I/O). Failure: none of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Callable, Mapping, Sequence

import numpy as np

from planning.model import Move, Wave
from planning.kernels.loads import Loads


PAD = -1        # after a row's end in a padded matrix (broker ids are never negative here)


def flat(rows: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, the ids one after another) of ``rows``."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    return lengths, np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))


def padded(lengths: np.ndarray, values: np.ndarray, width: int) -> np.ndarray:
    """``rows × width`` matrix of ``values`` (one row per length), :data:`PAD` after each row's end."""
    out = np.full((len(lengths), width), PAD, dtype=np.int64)
    out[np.arange(width)[None, :] < lengths[:, None]] = values
    return out


def id_coder(ids: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """id -> its index in the sorted, distinct ``ids``, for arrays of ids that are all in ``ids`` (a
    lookup table when the ids are small, else a binary search)."""
    if ids.size and int(ids[-1]) < 1 << 22:
        table = np.full(int(ids[-1]) + 1, -1, dtype=np.int64)
        table[ids] = np.arange(ids.size)
        return lambda x: table[x]
    return ids.searchsorted


class _Codes:
    """Broker ids -> dense codes 0..n-1 (sorted ids), and back."""

    def __init__(self, *arrays: np.ndarray) -> None:
        self.ids = np.unique(np.concatenate([a.ravel() for a in arrays])) if arrays else np.zeros(0, np.int64)
        self._code = id_coder(self.ids)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return self._code(a)

    def sums(self, at: np.ndarray, values: np.ndarray | int) -> np.ndarray:
        out = np.zeros(len(self.ids), dtype=np.int64)
        np.add.at(out, self(at), values)
        return out


@dataclass(frozen=True)
class MoveColumns:
    """The moves as flat arrays (one entry per move, or per replica with the lengths)."""

    size: np.ndarray
    leader: np.ndarray          # the copy-from broker (source_leader); only read where dests > 0
    n_dest: np.ndarray
    dest: np.ndarray

    @classmethod
    def of(cls, moves: Sequence[Move]) -> "MoveColumns":
        n = len(moves)
        n_dest, dest = flat([m.destinations for m in moves])
        size = np.fromiter((m.size for m in moves), dtype=np.int64, count=n)
        leader = np.fromiter((m.source_leader if m.destinations else -1 for m in moves), dtype=np.int64, count=n)
        return cls(size, leader, n_dest, dest)


def in_out_largest(cols: MoveColumns) -> tuple[int, int, int]:
    """(max inbound, max outbound over brokers, largest moving partition): :func:`wave_bounds`'s sums."""
    moving = cols.n_dest > 0
    if not moving.any():
        return 0, 0, 0
    codes = _Codes(cols.dest, cols.leader[moving])
    inbound = codes.sums(cols.dest, np.repeat(cols.size, cols.n_dest))
    outbound = codes.sums(cols.leader[moving], (cols.size * cols.n_dest)[moving])
    return int(inbound.max()), int(outbound.max()), int(cols.size[moving].max())


def fixed_batches_busiest_sum(moves: Sequence[Move], batch: int) -> tuple[int, int]:
    """(batches, sum over batches of the busiest broker's bytes) for batches of ``batch`` moves
    in (topic, partition) order: :func:`fixed_batch_bounds`' total."""
    order = sorted(moves, key=attrgetter("tp"))
    count = -(-len(order) // batch)
    cols = MoveColumns.of(order)
    moving = cols.n_dest > 0
    if not moving.any():
        return count, 0
    codes = _Codes(cols.dest, cols.leader[moving])
    width = len(codes.ids)
    which = np.arange(len(order)) // batch
    inbound = _busiest_per_batch(np.repeat(which, cols.n_dest) * width + codes(cols.dest),
                                 np.repeat(cols.size, cols.n_dest), width, count)
    outbound = _busiest_per_batch(which[moving] * width + codes(cols.leader[moving]),
                                  (cols.size * cols.n_dest)[moving], width, count)
    return count, int(np.maximum(inbound, outbound).sum())


def _busiest_per_batch(keys: np.ndarray, values: np.ndarray, width: int, count: int) -> np.ndarray:
    """Per batch, the largest per-broker sum of ``values`` (0 for none); ``keys`` = batch × width
    + broker code. Sparse: only the (batch, broker) pairs that occur are summed."""
    pairs, where = np.unique(keys, return_inverse=True)
    sums = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(sums, where, values)
    out = np.zeros(count, dtype=np.int64)
    np.maximum.at(out, pairs // width, sums)
    return out


def moved_loads_columns(before: Loads, moves: Sequence[Move]) -> Loads:
    """:func:`planning.kernels.loads.moved_loads` over arrays: ``before`` with every move applied."""
    rep, byt, lead = dict(before.replicas), dict(before.bytes), dict(before.leaders)
    if not moves:
        return Loads(rep, byt, lead)
    n_cur, cur = flat([m.current for m in moves])
    n_tgt, tgt = flat([m.target for m in moves])
    size = np.fromiter((m.size for m in moves), dtype=np.int64, count=len(moves))
    codes = _Codes(cur, tgt)
    d_rep = codes.sums(tgt, 1) - codes.sums(cur, 1)
    d_byt = codes.sums(tgt, np.repeat(size, n_tgt)) - codes.sums(cur, np.repeat(size, n_cur))
    first_cur = cur[np.concatenate([[0], np.cumsum(n_cur)[:-1]])[n_cur > 0]]
    first_tgt = tgt[np.concatenate([[0], np.cumsum(n_tgt)[:-1]])[n_tgt > 0]]
    d_lead = codes.sums(first_tgt, 1) - codes.sums(first_cur, 1)
    led = set(np.unique(np.concatenate([first_cur, first_tgt])).tolist())
    for b, dr, db, dl in zip(codes.ids.tolist(), d_rep.tolist(), d_byt.tolist(), d_lead.tolist()):
        rep[b] = rep.get(b, 0) + dr
        byt[b] = byt.get(b, 0) + db
        if b in led:
            lead[b] = lead.get(b, 0) + dl
    return Loads(rep, byt, lead)


@dataclass(frozen=True)
class DiskWalk:
    """Per broker of ``brokers`` (in that order): bytes after every wave, the highest level inside
    a wave and that wave's index (None: never above its level before), and replicas received."""

    after: list[int]
    peak: list[int]
    peak_wave: list[int | None]
    received: dict[int, int]


def disk_walk(waves: Sequence[Wave], before: Mapping[int, int], brokers: Sequence[int]) -> DiskWalk:
    """:func:`planning.kernels.capacity.disk_profile`'s walk over the waves, over arrays (a few
    waves × brokers matrices: the caller bounds their size, capacity.DISK_WALK_CELLS_MAX): a
    wave's inbound bytes (its ``inbound``) land on top of what earlier waves left, then the
    replicas it removes (each move's ``sources``) are freed."""
    moves = [m for w in waves for m in w.moves]
    wave_of = np.repeat(np.arange(len(waves)), [len(w.moves) for w in waves]).astype(np.int64)
    n_cur, cur_flat = flat([m.current for m in moves])
    n_tgt, tgt_flat = flat([m.target for m in moves])
    width_r = int(max(n_cur.max(initial=0), n_tgt.max(initial=0)))
    cur, tgt = padded(n_cur, cur_flat, width_r), padded(n_tgt, tgt_flat, width_r)
    leaving = (cur != PAD) & ~(cur[:, :, None] == tgt[:, None, :]).any(axis=2)   # each move's sources
    n_src, src = leaving.sum(axis=1), cur[leaving]
    n_dest, dest = flat([m.destinations for m in moves])
    size = np.fromiter((m.size for m in moves), dtype=np.int64, count=len(moves))
    in_keys = [np.fromiter(w.inbound, dtype=np.int64, count=len(w.inbound)) for w in waves]
    codes = _Codes(np.asarray(brokers, dtype=np.int64), src, dest, *in_keys)
    width, count = len(codes.ids), len(waves)
    inbound = np.zeros((count, width), dtype=np.int64)
    landing = np.zeros((count, width), dtype=bool)
    for i, (w, keys) in enumerate(zip(waves, in_keys)):
        at = codes(keys)
        inbound[i, at] = np.fromiter(w.inbound.values(), dtype=np.int64, count=len(keys))
        landing[i, at] = True
    freed = np.zeros(count * width, dtype=np.int64)
    np.add.at(freed, np.repeat(wave_of, n_src) * width + codes(src), np.repeat(size, n_src))
    freed = freed.reshape(count, width)
    at_b = codes(np.asarray(brokers, dtype=np.int64))
    start = np.zeros(width, dtype=np.int64)
    start[at_b] = np.fromiter((before.get(b, 0) for b in brokers), dtype=np.int64, count=len(brokers))
    steps = np.cumsum(inbound - freed, axis=0)
    entering = np.vstack([start[None, :], start[None, :] + steps[:-1]]) if count else np.zeros((0, width), np.int64)
    level = np.where(landing, entering + inbound, np.iinfo(np.int64).min)
    after = (start + steps[-1]) if count else start
    indexes = [w.index for w in waves]
    peak, peak_wave = [], []
    for b, c in zip(brokers, at_b.tolist()):
        top, base = (int(level[:, c].max()) if count else None), int(start[c])
        if top is not None and top > base:
            peak.append(top)
            peak_wave.append(indexes[int(level[:, c].argmax())])
        else:
            peak.append(base)
            peak_wave.append(None)
    got = codes.sums(dest, 1) if dest.size else np.zeros(width, np.int64)
    received = {b: n for b, n in zip(codes.ids.tolist(), got.tolist()) if n}
    return DiskWalk([int(after[c]) for c in at_b.tolist()], peak, peak_wave, received)
