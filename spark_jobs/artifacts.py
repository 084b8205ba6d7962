"""Plan artifacts in a run folder, and :func:`load_plan_artifacts` for the Airflow side.

Files written by :func:`write_plan_artifacts` (all JSON, compact, deterministic):

* ``plan.json`` — Kafka's reassignment JSON of the whole target (what ``--execute`` takes);
* ``rollback.json`` — the current assignment of every moved partition, same format;
* ``waves.json`` — ``{"version":1,"waves":[{"index","partitions":[{topic,partition,current,replicas}],
  "bytes","busiest_broker","busiest_bytes","predicted_seconds","znode_bytes"}]}``;
* ``throttles.json`` — per wave the throttled-replica lists per topic (leader/follower, Kafka's
  ``p:b`` format) and the brokers that get the rate, plus the rate;
* ``election.json`` / ``deletion.json`` — batches for the election and delete-topics operations;
* ``summary.json`` — counts, bytes, per-broker load before/after, spreads, lower bounds,
  predicted duration, notes, and ``plan_hash``;
* ``plan.sha256`` — the plan hash: sha256 of a canonical JSON of the semantic content
  (operation, each move's tp/current/target, wave membership, election and deletion batches).
  Sizes, timings and file layout do not enter it, so re-planning the same input gives the same
  hash and an approval can pin it.

Failure: :func:`load_plan_artifacts` raises :class:`kafka_zk.errors.InvalidPayload` for a
missing file or a folder whose content no longer matches ``plan.sha256`` (edited after approval).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kafka_zk.codecs import TopicPartition, decode_reassignment_file
from kafka_zk.errors import InvalidPayload
from kafka_zk.throttle_lists import TopicThrottle, parse_replica_list
from spark_jobs.kernels.model import Plan
from spark_jobs.kernels.throttles import wave_throttles
from spark_jobs.kernels.waves import Wave


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")


def _write(directory: str, name: str, data: bytes) -> None:
    path = os.path.join(directory, name)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.write(b"\n")
    os.replace(tmp, path)


def canonical_content(operation: str, moves: Sequence[tuple[TopicPartition, tuple[int, ...], tuple[int, ...]]],
                      waves: Sequence[Sequence[TopicPartition]],
                      election: Sequence[Sequence[TopicPartition]] = (),
                      deletion: Sequence[Sequence[str]] = ()) -> bytes:
    return _dump({"operation": operation,
                  "moves": [[tp.topic, tp.partition, list(c), list(t)] for tp, c, t in sorted(moves)],
                  "waves": [[[tp.topic, tp.partition] for tp in sorted(w)] for w in waves],
                  "election": [[[tp.topic, tp.partition] for tp in b] for b in election],
                  "deletion": [list(b) for b in deletion]})


def plan_hash(plan: Plan, waves: Sequence[Wave]) -> str:
    """sha256 of :func:`canonical_content` for the plan and its waves (written directly, same bytes)."""
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


@dataclass(frozen=True)
class WaveArtifact:
    """One wave as the executor needs it: targets, current lists, throttles."""

    index: int
    target: Mapping[TopicPartition, tuple[int, ...]]
    current: Mapping[TopicPartition, tuple[int, ...]]
    bytes: int
    predicted_seconds: float | None
    throttles: Mapping[str, TopicThrottle]
    throttled_brokers: frozenset[int]


@dataclass(frozen=True)
class PlanArtifacts:
    """Everything in a plan folder, typed, hash-checked."""

    directory: str
    operation: str
    plan_hash: str
    target: Mapping[TopicPartition, tuple[int, ...]]
    rollback: Mapping[TopicPartition, tuple[int, ...]]
    waves: tuple[WaveArtifact, ...]
    throttle_bytes_per_s: int | None
    election: tuple[tuple[TopicPartition, ...], ...]
    deletion: tuple[tuple[str, ...], ...]
    summary_path: str


def _read(directory: str, name: str) -> bytes:
    try:
        with open(os.path.join(directory, name), "rb") as f:
            return f.read()
    except OSError as exc:
        raise InvalidPayload(f"plan folder {directory}: {name} cannot be read ({exc.strerror}); "
                             "re-run the plan step") from None


def _pairs(text: str) -> frozenset[tuple[int, int]]:
    parsed = parse_replica_list(text)
    return frozenset() if parsed == "*" else parsed


def load_plan_artifacts(directory: str) -> PlanArtifacts:
    """Read a plan folder and check its content against ``plan.sha256``."""
    summary = json.loads(_read(directory, "summary.json"))
    digest = _read(directory, "plan.sha256").decode("ascii").strip()
    target = {e.tp: e.replicas for e in decode_reassignment_file(_read(directory, "plan.json"))} \
        if summary.get("moves", 0) else {}
    rollback = {e.tp: e.replicas for e in decode_reassignment_file(_read(directory, "rollback.json"))} \
        if summary.get("moves", 0) else {}
    wdoc = json.loads(_read(directory, "waves.json"))
    tdoc = json.loads(_read(directory, "throttles.json"))
    edoc = json.loads(_read(directory, "election.json"))
    ddoc = json.loads(_read(directory, "deletion.json"))
    throttles = {w["index"]: w for w in tdoc["waves"]}
    waves = []
    for w in wdoc["waves"]:
        th = throttles.get(w["index"], {"topics": {}, "brokers": []})
        waves.append(WaveArtifact(
            w["index"],
            {TopicPartition(p["topic"], p["partition"]): tuple(p["replicas"]) for p in w["partitions"]},
            {TopicPartition(p["topic"], p["partition"]): tuple(p["current"]) for p in w["partitions"]},
            w["bytes"], w["predicted_seconds"],
            {t: TopicThrottle(t, _pairs(v["leader"]), _pairs(v["follower"])) for t, v in th["topics"].items()},
            frozenset(th["brokers"])))
    election = tuple(tuple(TopicPartition(e["topic"], e["partition"]) for e in b) for b in edoc["batches"])
    deletion = tuple(tuple(b) for b in ddoc["batches"])
    moves = [(tp, rollback.get(tp, ()), t) for tp, t in target.items()]
    recomputed = hashlib.sha256(canonical_content(
        summary["operation"], moves, [list(w.target) for w in waves], election, deletion)).hexdigest()
    if recomputed != digest or summary.get("plan_hash") != digest:
        raise InvalidPayload(f"plan folder {directory}: content does not match plan.sha256 ({digest[:12]}…); "
                             "the plan was edited after it was made — re-run the plan step and approve again")
    return PlanArtifacts(directory, summary["operation"], digest, target, rollback, tuple(waves),
                         tdoc.get("throttle_bytes_per_s"), election, deletion,
                         os.path.join(directory, "summary.json"))
