"""The plan folder's format, as the runbooks read it: :func:`load_plan_artifacts` and :func:`canonical_content`.

The plan job and the batch runbooks' plan steps write a plan folder (:mod:`planning.plan_folder.write`); every other layer reads it
through here, so the format has one reader and the operators need not import the planner:

* ``plan.json`` — Kafka's reassignment JSON of the whole target (what ``--execute`` takes);
* ``rollback.json`` — the current assignment of every moved partition, same format;
* ``waves.json`` — ``{"version":1,"waves":[{"index","partitions":[{topic,partition,current,replicas,size}],
  "bytes","busiest_broker","busiest_bytes","predicted_seconds","znode_bytes"}]}``;
* ``throttles.json`` — per wave the throttled-replica lists per topic (leader/follower, Kafka's
  ``p:b`` format) and the brokers that get the rate, plus the rate;
* ``election.json`` / ``deletion.json`` — batches for the election and delete-topics operations;
* ``summary.json`` — counts, bytes, per-broker load before/after, spreads, lower bounds,
  predicted duration, notes, and ``plan_hash``;
* ``plan.sha256`` — the plan hash: sha256 of :func:`canonical_content` (operation, each move's
  tp/current/target, wave membership, election and deletion batches). Sizes, timings and file
  layout do not enter it, so re-planning the same input gives the same hash and an approval can
  pin it.

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


def canonical_json(obj: Any) -> bytes:
    """Compact, key-sorted UTF-8 JSON: the bytes of every plan file but ``plan.json``/``waves.json``."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")


def canonical_content(operation: str, moves: Sequence[tuple[TopicPartition, tuple[int, ...], tuple[int, ...]]],
                      waves: Sequence[Sequence[TopicPartition]],
                      election: Sequence[Sequence[TopicPartition]] = (),
                      deletion: Sequence[Sequence[str]] = ()) -> bytes:
    return canonical_json({"operation": operation,
                  "moves": [[tp.topic, tp.partition, list(c), list(t)] for tp, c, t in sorted(moves)],
                  "waves": [[[tp.topic, tp.partition] for tp in sorted(w)] for w in waves],
                  "election": [[[tp.topic, tp.partition] for tp in b] for b in election],
                  "deletion": [list(b) for b in deletion]})


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
