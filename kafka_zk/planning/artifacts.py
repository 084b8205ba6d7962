"""The writing side of the plan folder: :func:`write_plan_artifacts` and the plan hash.

Used by the plan job (``spark_jobs/plan_job.py``) and by the batch runbooks' plan steps (deletion,
election), which plan in the task. The format's one reader is
:func:`kafka_zk.plan_artifacts.load_plan_artifacts` (the runbooks read plans without importing the planner). Here the files are
written (all JSON, compact, deterministic; ``plan.json``/``rollback.json``/``waves.json``
encoded directly for large plans, byte for byte what the canonical dump gives) and
:func:`plan_hash` computes :func:`kafka_zk.plan_artifacts.canonical_content`'s sha256 without
building the intermediate document. The hash file is written last.

Failure: OSError from the file system; nothing here validates (the kernels did).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.plan_artifacts import canonical_json as _dump
from kafka_zk.planning.model import Plan, Wave
from kafka_zk.planning.throttles import wave_throttles


def _write(directory: str, name: str, data: bytes) -> None:
    path = os.path.join(directory, name)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.write(b"\n")
    os.replace(tmp, path)


def plan_hash(plan: Plan, waves: Sequence[Wave]) -> str:
    """sha256 of :func:`kafka_zk.plan_artifacts.canonical_content` for the plan and its waves (written directly, same bytes)."""
    names: dict[str, str] = {}
    moves = ",".join(f'[{_json_str(names, m.tp.topic)},{m.tp.partition},[{",".join(map(str, m.current))}],'
                     f'[{",".join(map(str, m.target))}]]' for m in sorted(plan.moves, key=lambda m: m.tp))
    wave_text = ",".join("[" + ",".join(f"[{_json_str(names, tp.topic)},{tp.partition}]"
                                        for tp in sorted(m.tp for m in w.moves)) + "]" for w in waves)
    election = _dump([[[tp.topic, tp.partition] for tp in b] for b in plan.election]).decode("utf-8")
    deletion = _dump([list(b) for b in plan.deletion]).decode("utf-8")
    text = (f'{{"deletion":{deletion},"election":{election},"moves":[{moves}],'
            f'"operation":{json.dumps(plan.operation, ensure_ascii=False)},"waves":[{wave_text}]}}')
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def waves_json(waves: Sequence[Wave]) -> bytes:
    """``_dump(waves_doc(waves))``, byte for byte (keys sorted), written directly."""
    names: dict[str, str] = {}
    dump = json.dumps
    parts = []
    for w in waves:
        moves = ",".join(
            f'{{"current":[{",".join(map(str, m.current))}],"partition":{m.tp.partition},'
            f'"replicas":[{",".join(map(str, m.target))}],"size":{m.size},"topic":{_json_str(names, m.tp.topic)}}}'
            for m in w.moves)
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


def write_plan_artifacts(out_dir: str, plan: Plan, waves: Sequence[Wave], summary: Mapping[str, Any],
                         throttle: int | None) -> str:
    """Write every artifact; return the plan hash. The hash file is written last."""
    os.makedirs(out_dir, exist_ok=True)
    digest = plan_hash(plan, waves)
    _write(out_dir, "plan.json", reassignment_json(plan.target))
    _write(out_dir, "rollback.json", reassignment_json(plan.current()))
    _write(out_dir, "waves.json", waves_json(waves))
    _write(out_dir, "throttles.json", _dump(throttles_doc(waves, throttle)))
    _write(out_dir, "election.json", _dump({"version": 1, "batches": [
        [{"topic": tp.topic, "partition": tp.partition} for tp in b] for b in plan.election]}))
    _write(out_dir, "deletion.json", _dump({"version": 1, "batches": [list(b) for b in plan.deletion]}))
    _write(out_dir, "summary.json", _dump(dict(summary, plan_hash=digest)))
    _write(out_dir, "plan.sha256", digest.encode("ascii"))
    return digest


