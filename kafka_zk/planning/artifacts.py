"""The writing side of the plan folder: :func:`write_plan_artifacts` and the plan hash.

Used by the plan job (``spark_jobs/plan_job.py``) and by the batch runbooks' plan steps (deletion,
election), which plan in the task. The format's one reader is
:func:`kafka_zk.plan_artifacts.load_plan_artifacts` (the runbooks read plans without importing the planner). Here the files are
written (all JSON, compact, deterministic). ``plan.json``, ``rollback.json``, ``waves.json``,
``throttles.json`` and the hash are encoded directly, byte for byte what the canonical dump of
their documents gives (``tests/spark_jobs/test_fast_paths.py``): each move's topic and replica
lists are turned into text once (:class:`_MoveText`) and reused by every file, and the
throttle lists of a wave are built from its moves in (topic, partition) order without the
sets and re-sorting of :func:`kafka_zk.planning.throttles.wave_throttles` (at 10⁶ partitions the
plain path spent ~12 s of CPU on 263,616 moves; BENCHMARKS.md). :func:`plan_hash` computes
:func:`kafka_zk.plan_artifacts.canonical_content`'s sha256 without building the intermediate
document. The hash file is written last.

Failure: OSError from the file system; nothing here validates (the kernels did).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.plan_artifacts import canonical_json as _dump
from kafka_zk.planning.model import Move, Plan, Wave
from kafka_zk.planning.throttles import wave_throttles


def _write(directory: str, name: str, data: bytes) -> None:
    path = os.path.join(directory, name)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.write(b"\n")
    os.replace(tmp, path)


class _MoveText:
    """Each move's JSON pieces, made once: its topic as a JSON string, its current and target
    lists as comma-joined ids (the text between the brackets). Keyed by the move object."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.of: dict[int, tuple[Move, str, str, str]] = {}

    def __call__(self, m: Move) -> tuple[Move, str, str, str]:
        got = self.of.get(id(m))
        if got is None or got[0] is not m:
            got = self.of[id(m)] = (m, _json_str(self.names, m.tp.topic), ",".join(map(str, m.current)),
                                    ",".join(map(str, m.target)))
        return got


def plan_hash(plan: Plan, waves: Sequence[Wave], text: _MoveText | None = None) -> str:
    """sha256 of :func:`kafka_zk.plan_artifacts.canonical_content` for the plan and its waves (written directly, same bytes)."""
    text = text or _MoveText()
    moves = ",".join([f"[{t},{m.tp.partition},[{cur}],[{tgt}]]"
                      for m, t, cur, tgt in map(text, sorted(plan.moves, key=_tp))])
    wave_text = ",".join(["[" + ",".join([f"[{t},{m.tp.partition}]" for m, t, _, _ in map(text, sorted(w.moves, key=_tp))])
                          + "]" for w in waves])
    election = _dump([[[tp.topic, tp.partition] for tp in b] for b in plan.election]).decode("utf-8")
    deletion = _dump([list(b) for b in plan.deletion]).decode("utf-8")
    out = (f'{{"deletion":{deletion},"election":{election},"moves":[{moves}],'
           f'"operation":{json.dumps(plan.operation, ensure_ascii=False)},"waves":[{wave_text}]}}')
    return hashlib.sha256(out.encode("utf-8")).hexdigest()


def _tp(m: Move) -> TopicPartition:
    return m.tp


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


def _plan_files(plan: Plan, text: _MoveText) -> tuple[bytes, bytes]:
    """``reassignment_json(plan.target)`` and ``reassignment_json(plan.current())`` from the
    moves' text, when the moves name each partition once and are exactly the target map (what
    :func:`kafka_zk.planning.model.make_plan` gives); else the plain encoding of both."""
    moves = sorted(plan.moves, key=_tp)
    target = plan.target
    if len(target) != len(moves) or len({m.tp for m in moves}) != len(moves) or \
            any(target.get(m.tp) != m.target for m in moves):
        return reassignment_json(plan.target), reassignment_json(plan.current())
    rows = [(f'{{"topic":{t},"partition":{m.tp.partition},"replicas":[', tgt, cur) for m, t, cur, tgt in map(text, moves)]
    head = '{"version":1,"partitions":['
    return ((head + ",".join([f"{p}{tgt}]}}" for p, tgt, _ in rows]) + "]}").encode("utf-8"),
            (head + ",".join([f"{p}{cur}]}}" for p, _, cur in rows]) + "]}").encode("utf-8"))


def waves_json(waves: Sequence[Wave], text: _MoveText | None = None) -> bytes:
    """``_dump(waves_doc(waves))``, byte for byte (keys sorted), written directly."""
    text = text or _MoveText()
    dump = json.dumps
    parts = []
    for w in waves:
        moves = ",".join([f'{{"current":[{cur}],"partition":{m.tp.partition},"replicas":[{tgt}],"size":{m.size},'
                          f'"topic":{t}}}' for m, t, cur, tgt in map(text, w.moves)])
        parts.append(f'{{"busiest_broker":{dump(w.busiest_broker)},"busiest_bytes":{dump(w.busiest_bytes)},'
                     f'"bytes":{dump(w.bytes)},"index":{dump(w.index)},"partitions":[{moves}],'
                     f'"predicted_seconds":{dump(w.predicted_seconds)},"znode_bytes":{dump(w.znode_bytes)}}}')
    return ('{"version":1,"waves":[' + ",".join(parts) + "]}").encode("utf-8")


def waves_doc(waves: Sequence[Wave]) -> dict[str, Any]:
    return {"version": 1, "waves": [{
        "index": w.index, "bytes": w.bytes, "busiest_broker": w.busiest_broker,
        "busiest_bytes": w.busiest_bytes, "predicted_seconds": w.predicted_seconds,
        "znode_bytes": w.znode_bytes,
        "partitions": [{"topic": m.tp.topic, "partition": m.tp.partition, "current": list(m.current),
                        "replicas": list(m.target), "size": m.size} for m in w.moves]} for w in waves]}


def throttles_doc(waves: Sequence[Wave], throttle: int | None) -> dict[str, Any]:
    out = []
    for w in waves:
        wt = wave_throttles(w)
        out.append({"index": w.index, "brokers": sorted(wt.brokers), "topics": {
            t: {"leader": th.leader_text(), "follower": th.follower_text()} for t, th in sorted(wt.topics.items())}})
    return {"version": 1, "throttle_bytes_per_s": throttle, "waves": out}


def _wave_throttles_json(w: Wave, names: dict[str, str], suffix: dict[int, str]) -> str:
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
        tp = m.tp
        if tp.topic != topic:
            if topic is not None:
                topics.append(f'{_json_str(names, topic)}:{{"follower":"{",".join(follower)}",'
                              f'"leader":"{",".join(leader)}"}}')
            topic, leader, follower = tp.topic, [], []
        p = str(tp.partition)
        cur = m.current
        brokers.update(cur)
        brokers.update(dests)
        leader.extend([p + suffix[b] for b in sorted(set(cur))])
        follower.extend([p + suffix[b] for b in sorted(set(dests))])
    if topic is not None:
        topics.append(f'{_json_str(names, topic)}:{{"follower":"{",".join(follower)}","leader":"{",".join(leader)}"}}')
    return f'{{"brokers":[{",".join(map(str, sorted(brokers)))}],"index":{json.dumps(w.index)},"topics":{{{",".join(topics)}}}}}'


class _Suffix(dict):
    """``:<broker>`` per broker id, made on first use."""

    def __missing__(self, b: int) -> str:
        out = self[b] = f":{b}"
        return out


def throttles_json(waves: Sequence[Wave], throttle: int | None) -> bytes:
    """``_dump(throttles_doc(waves, throttle))``, byte for byte, written directly; a wave that
    names a partition twice (no plan does) takes the plain path."""
    names: dict[str, str] = {}
    suffix = _Suffix()
    parts = []
    for w in waves:
        if len({m.tp for m in w.moves}) != len(w.moves):
            wt = wave_throttles(w)
            parts.append(_dump({"index": w.index, "brokers": sorted(wt.brokers), "topics": {
                t: {"leader": th.leader_text(), "follower": th.follower_text()} for t, th in wt.topics.items()}}
            ).decode("utf-8"))
        else:
            parts.append(_wave_throttles_json(w, names, suffix))
    return (f'{{"throttle_bytes_per_s":{json.dumps(throttle)},"version":1,"waves":[' + ",".join(parts)
            + "]}").encode("utf-8")


def write_move_files(out_dir: str, plan: Plan, waves: Sequence[Wave], throttle: int | None) -> str:
    """The files made from the moves and waves (``plan.json``, ``rollback.json``, ``waves.json``,
    ``throttles.json``); returns the plan hash. The first half of :func:`write_plan_artifacts`."""
    os.makedirs(out_dir, exist_ok=True)
    text = _MoveText()
    digest = plan_hash(plan, waves, text)
    target, rollback = _plan_files(plan, text)
    _write(out_dir, "plan.json", target)
    _write(out_dir, "rollback.json", rollback)
    _write(out_dir, "waves.json", waves_json(waves, text))
    _write(out_dir, "throttles.json", throttles_json(waves, throttle))
    return digest


def write_plan_artifacts(out_dir: str, plan: Plan, waves: Sequence[Wave], summary: Mapping[str, Any],
                         throttle: int | None) -> str:
    """Write every artifact; return the plan hash. The hash file is written last."""
    digest = write_move_files(out_dir, plan, waves, throttle)
    _write(out_dir, "election.json", _dump({"version": 1, "batches": [
        [{"topic": tp.topic, "partition": tp.partition} for tp in b] for b in plan.election]}))
    _write(out_dir, "deletion.json", _dump({"version": 1, "batches": [list(b) for b in plan.deletion]}))
    _write(out_dir, "summary.json", _dump(dict(summary, plan_hash=digest)))
    _write(out_dir, "plan.sha256", digest.encode("ascii"))
    return digest
