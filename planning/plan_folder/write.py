"""The writing side of the plan folder: :func:`write_plan_artifacts` and the plan hash.

Used by the plan job (``spark_jobs/plan_job.py``) and by the batch runbooks' plan steps (deletion,
election), which plan in the task. The format's one reader is
:func:`planning.plan_folder.read.load_plan_artifacts` (the runbooks read plans without importing the planner). Here the files are
written (all JSON, compact, deterministic). ``plan.json``, ``rollback.json``, ``waves.json``,
``throttles.json`` and the hash are encoded directly, byte for byte what the canonical dump of
their documents gives (``tests/spark_jobs/test_fast_paths.py``): the per-move parts of the hash,
``plan.json``, ``rollback.json`` and ``waves.json`` are encoded by msgspec from tuples and
structs whose fields are in the files' key order (msgspec writes every string exactly as
``json.dumps(..., ensure_ascii=False)`` does; at 10⁶ partitions the hash and those files went
from ~4.2 to ~1.5 s of CPU), and the
throttle lists of a wave are built from its moves in (topic, partition) order without the
sets and re-sorting of :func:`planning.throttles.wave_throttles` (at 10⁶ partitions the
plain path spent ~12 s of CPU on 263,616 moves; BENCHMARKS.md). :func:`plan_hash` computes
:func:`planning.plan_folder.read.canonical_content`'s sha256 without building the intermediate
document. The hash file is written last.

Failure: OSError from the file system; nothing here validates (the kernels did).
"""

from __future__ import annotations

import hashlib
import json
import os
from operator import attrgetter
from typing import Any, Callable, Mapping, Sequence

import msgspec

from kafka_zk.codecs import TopicPartition
from planning.plan_folder.read import canonical_json as _dump
from planning.model import Move, Plan, Wave
from planning.throttles import wave_throttles


def _write(directory: str, name: str, data: bytes) -> None:
    path = os.path.join(directory, name)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.write(b"\n")
    os.replace(tmp, path)


_encode = msgspec.json.Encoder().encode     # compact JSON; strings exactly as json.dumps(ensure_ascii=False)
_tp = attrgetter("tp")


def plan_hash(plan: Plan, waves: Sequence[Wave]) -> str:
    """sha256 of :func:`planning.plan_folder.read.canonical_content` for the plan and its waves (written directly, same bytes)."""
    moves = _encode([(m.tp.topic, m.tp.partition, m.current, m.target) for m in sorted(plan.moves, key=_tp)])
    wave_text = _encode([[m.tp for m in sorted(w.moves, key=_tp)] for w in waves])
    election = _dump([[[tp.topic, tp.partition] for tp in b] for b in plan.election])
    deletion = _dump([list(b) for b in plan.deletion])
    out = b"".join((b'{"deletion":', deletion, b',"election":', election, b',"moves":', moves,
                    b',"operation":', _dump(plan.operation), b',"waves":', wave_text, b"}"))
    return hashlib.sha256(out).hexdigest()


def _json_str(cache: dict[str, str], text: str) -> str:
    out = cache.get(text)
    if out is None:
        out = cache[text] = json.dumps(text, ensure_ascii=False)
    return out


def reassignment_json(entries: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """``kafka_zk.codecs.encode_reassignment_file(entries)``, byte for byte, written directly.

    Entries sorted by (topic, partition); compact JSON; a large plan is encoded in one pass.
    """
    names: dict[str, str] = {}
    items = [f'{{"topic":{_json_str(names, tp.topic)},"partition":{tp.partition},'
             f'"replicas":[{",".join(map(str, entries[tp]))}]}}' for tp in sorted(entries)]
    return ('{"version":1,"partitions":[' + ",".join(items) + "]}").encode("utf-8")


class _Entry(msgspec.Struct):
    """One ``partitions`` entry of Kafka's reassignment JSON, fields in Kafka's order."""

    topic: str
    partition: int
    replicas: tuple[int, ...]


class _WaveEntry(msgspec.Struct):
    """One partition of ``waves.json``, fields in sorted order (the canonical dump's)."""

    current: tuple[int, ...]
    partition: int
    replicas: tuple[int, ...]
    size: int
    topic: str


def _plan_files(plan: Plan) -> tuple[bytes, bytes]:
    """``reassignment_json(plan.target)`` and ``reassignment_json(plan.current())`` from the
    moves, when the moves name each partition once and are exactly the target map (what
    :func:`planning.model.make_plan` gives); else the plain encoding of both."""
    moves = sorted(plan.moves, key=_tp)
    target = plan.target
    if len(target) != len(moves) or len({m.tp for m in moves}) != len(moves) or \
            any(target.get(m.tp) != m.target for m in moves):
        return reassignment_json(plan.target), reassignment_json(plan.current())
    head = b'{"version":1,"partitions":'
    return (head + _encode([_Entry(m.tp.topic, m.tp.partition, m.target) for m in moves]) + b"}",
            head + _encode([_Entry(m.tp.topic, m.tp.partition, m.current) for m in moves]) + b"}")


def waves_json(waves: Sequence[Wave]) -> bytes:
    """``_dump(waves_doc(waves))``, byte for byte (keys sorted), written directly."""
    dump = json.dumps
    parts = []
    for w in waves:
        moves = _encode([_WaveEntry(m.current, m.tp.partition, m.target, m.size, m.tp.topic) for m in w.moves])
        parts.append(b"".join((f'{{"busiest_broker":{dump(w.busiest_broker)},"busiest_bytes":{dump(w.busiest_bytes)},'
                               f'"bytes":{dump(w.bytes)},"index":{dump(w.index)},"partitions":'.encode("utf-8"), moves,
                               f',"predicted_seconds":{dump(w.predicted_seconds)},"znode_bytes":{dump(w.znode_bytes)}}}'
                               .encode("utf-8"))))
    return b'{"version":1,"waves":[' + b",".join(parts) + b"]}"


def waves_doc(waves: Sequence[Wave]) -> dict[str, Any]:
    return {"version": 1, "waves": [{
        "index": w.index, "bytes": w.bytes, "busiest_broker": w.busiest_broker,
        "busiest_bytes": w.busiest_bytes, "predicted_seconds": w.predicted_seconds,
        "znode_bytes": w.znode_bytes,
        "partitions": [{"topic": m.tp.topic, "partition": m.tp.partition, "current": list(m.current),
                        "replicas": list(m.target), "size": m.size} for m in w.moves]} for w in waves]}


def throttles_doc(waves: Sequence[Wave], throttle: int | None, dead: frozenset[int] = frozenset()) -> dict[str, Any]:
    out = []
    for w in waves:
        wt = wave_throttles(w, dead)
        out.append({"index": w.index, "brokers": sorted(wt.brokers), "topics": {
            t: {"leader": th.leader_text(), "follower": th.follower_text()} for t, th in sorted(wt.topics.items())}})
    return {"version": 1, "throttle_bytes_per_s": throttle, "waves": out}


def _wave_throttles_json(w: Wave, names: dict[str, str], suffix: dict[int, str],
                         dead: frozenset[int] = frozenset()) -> str:
    """One wave of :func:`throttles_doc`, encoded: the leader list of a topic is ``p:b`` for each
    current replica ``b`` of each of its moving partitions ``p``, the follower list ``p:d`` for
    each destination, both sorted by (partition, broker); a wave names a partition once, so
    walking its moves in (topic, partition) order with each move's brokers sorted is that order."""
    brokers: set[int] = set()
    topics: list[str] = []
    topic = None
    leader: list[str] = []
    follower: list[str] = []
    for m in sorted(w.moves, key=_tp):
        dests = m.destinations
        if not dests:
            continue
        name, pid = m.tp
        if name != topic:
            if topic is not None:
                topics.append(f'{_json_str(names, topic)}:{{"follower":"{",".join(follower)}",'
                              f'"leader":"{",".join(leader)}"}}')
            topic, leader, follower = name, [], []
        p = str(pid)
        cur = m.current
        if dead and not dead.isdisjoint(cur):     # a dead broker sends nothing: no rate, no leader entry
            cur = tuple(b for b in cur if b not in dead)
        brokers.update(cur)
        brokers.update(dests)
        leader += [p + suffix[b] for b in (sorted(set(cur)) if len(cur) > 1 else cur)]
        follower += [p + suffix[b] for b in (sorted(set(dests)) if len(dests) > 1 else dests)]
    if topic is not None:
        topics.append(f'{_json_str(names, topic)}:{{"follower":"{",".join(follower)}","leader":"{",".join(leader)}"}}')
    return f'{{"brokers":[{",".join(map(str, sorted(brokers)))}],"index":{json.dumps(w.index)},"topics":{{{",".join(topics)}}}}}'


class _Suffix(dict):
    """``:<broker>`` per broker id, made on first use."""

    def __missing__(self, b: int) -> str:
        out = self[b] = f":{b}"
        return out


def throttles_json(waves: Sequence[Wave], throttle: int | None, dead: frozenset[int] = frozenset()) -> bytes:
    """``_dump(throttles_doc(waves, throttle))``, byte for byte, written directly; a wave that
    names a partition twice (no plan does) takes the plain path."""
    names: dict[str, str] = {}
    suffix = _Suffix()
    parts = []
    for w in waves:
        if len({m.tp for m in w.moves}) != len(w.moves):
            wt = wave_throttles(w, dead)
            parts.append(_dump({"index": w.index, "brokers": sorted(wt.brokers), "topics": {
                t: {"leader": th.leader_text(), "follower": th.follower_text()} for t, th in wt.topics.items()}}
            ).decode("utf-8"))
        else:
            parts.append(_wave_throttles_json(w, names, suffix, dead))
    return (f'{{"throttle_bytes_per_s":{json.dumps(throttle)},"version":1,"waves":[' + ",".join(parts)
            + "]}").encode("utf-8")


def write_move_files(out_dir: str, plan: Plan, waves: Sequence[Wave], throttle: int | None) -> str:
    """The files made from the moves and waves (``plan.json``, ``rollback.json``, ``waves.json``,
    ``throttles.json``); returns the plan hash. The first half of :func:`write_plan_artifacts`;
    its two halves (:func:`write_plan_files`, :func:`write_wave_files`) may run in two processes."""
    digest = write_plan_files(out_dir, plan, waves)
    write_wave_files(out_dir, plan, waves, throttle)
    return digest


def write_plan_files(out_dir: str, plan: Plan, waves: Sequence[Wave]) -> str:
    """``plan.json`` and ``rollback.json``; returns the plan hash."""
    os.makedirs(out_dir, exist_ok=True)
    digest = plan_hash(plan, waves)
    target, rollback = _plan_files(plan)
    _write(out_dir, "plan.json", target)
    _write(out_dir, "rollback.json", rollback)
    return digest


def write_wave_files(out_dir: str, plan: Plan, waves: Sequence[Wave], throttle: int | None) -> None:
    """``waves.json`` and ``throttles.json``."""
    os.makedirs(out_dir, exist_ok=True)
    _write(out_dir, "waves.json", waves_json(waves))
    _write(out_dir, "throttles.json", throttles_json(waves, throttle, plan.dead))


MOVE_FILES = ("plan.json", "rollback.json", "waves.json", "throttles.json")


def remove_move_files(out_dir: str) -> None:
    """Remove what :func:`write_move_files` writes (a plan that failed after they were written)."""
    for name in MOVE_FILES:
        path = os.path.join(out_dir, name)
        if os.path.exists(path):
            os.unlink(path)


def write_plan_artifacts(out_dir: str, plan: Plan, waves: Sequence[Wave], summary: Mapping[str, Any],
                         throttle: int | None, move_files: Callable[[], str] | None = None) -> str:
    """Write every artifact; return the plan hash. The hash file is written last. ``move_files``:
    waits for :func:`write_move_files` of the same plan written elsewhere (a forked child) and
    returns its hash; by default they are written here."""
    digest = move_files() if move_files is not None else write_move_files(out_dir, plan, waves, throttle)
    _write(out_dir, "election.json", _dump({"version": 1, "batches": [
        [{"topic": tp.topic, "partition": tp.partition} for tp in b] for b in plan.election]}))
    _write(out_dir, "deletion.json", _dump({"version": 1, "batches": [list(b) for b in plan.deletion]}))
    _write(out_dir, "summary.json", _dump(dict(summary, plan_hash=digest)))
    _write(out_dir, "plan.sha256", digest.encode("ascii"))
    return digest
