"""Retiring brokers: being decommissioned, kept out of every later plan until a person releases them.

A decommission drains brokers that stay registered until someone stops them; without a memory of
that, the next plan sees empty brokers and moves replicas back onto them (issue 24, finding 7), and
a decommission approved but stopped before it drained (or still draining) protects nothing (issue
39). :class:`RetiringFile` is that memory: a JSON file, per cluster (keyed by the cluster id Kafka
keeps in ``/cluster/id``, so the runbooks and the command line agree whatever they call the
cluster), of the brokers being retired, each with when, by which run (and its run folder), why,
and its stage — ``approved`` (the decommission was approved, not yet drained) or ``drained``::

    {"version": 1, "clusters": {"<cluster id>": {"3": {"since": "...", "by": "...", "why": "...",
                                                       "stage": "approved", "run_folder": "..."}}}}

A decommission adds its brokers when it is approved (``approved``) and marks them ``drained`` when
its ``verify_drained`` passes; a rejected or expired decommission, or the rollback of one, releases
the brokers that run recorded (:meth:`RetiringFile.release_run`); a person releases them
(``kafka-runbook retiring release``, or by editing the file). Plans apply the list at their input
(:func:`exclude_from_snapshot`): the snapshot handed to the planner lists the brokers minus the
retiring ones, so no planning kernel can choose them as a destination. A broker still ``approved``
may hold replicas (its decommission has not drained it): they are left where they are (the
planners leave a partition with a replica on an unlisted broker alone). A ``drained`` broker that
holds replicas again is refused, unless this plan is the one removing it. The file's default
place (:func:`default_path`) is the runbooks' ``<run_root>/retiring_brokers.json``.

Failure: :class:`~kafka_zk.errors.InvalidInput` for an unreadable or malformed file (naming it and
the fix) and for a retiring broker that still holds replicas (naming it, the count and the fix).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import codecs, paths
from kafka_zk.audit import utc_now_iso
from kafka_zk.errors import InvalidInput, InvalidPayload
from kafka_zk.model import ClusterSnapshot
from kafka_zk.files import write_json_atomic

ENV = "KAFKA_RUNBOOKS_RETIRING_FILE"
DEFAULT_NAME = "retiring_brokers.json"
APPROVED, DRAINED = "approved", "drained"


def default_path(run_root: str | Path) -> Path:
    """``$KAFKA_RUNBOOKS_RETIRING_FILE``, else ``<run_root>/retiring_brokers.json`` (the command line
    passes the runbooks' default run root, :func:`procedures.run_folder.default_run_root`)."""
    return Path(os.environ.get(ENV) or Path(run_root) / DEFAULT_NAME)


@dataclass(frozen=True)
class RetiringBroker:
    """One broker being retired: since when, by which run, why."""

    broker: int
    since: str
    by: str
    why: str
    stage: str = DRAINED
    run_folder: str = ""

    def text(self) -> str:
        return f"broker {self.broker}: retiring since {self.since} ({self.why}; {self.by})"


@dataclass
class RetiringFile:
    """The retiring brokers of every cluster, as stored in ``path`` (see module docstring)."""

    path: Path
    clusters: dict[str, dict[int, RetiringBroker]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> "RetiringFile":
        path = Path(path)
        if not path.is_file():
            return cls(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            clusters = {str(cid): {int(b): RetiringBroker(int(b), str(e["since"]), str(e["by"]), str(e["why"]),
                                                          str(e.get("stage") or DRAINED),
                                                          str(e.get("run_folder") or ""))
                                   for b, e in entries.items()}
                        for cid, entries in doc["clusters"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidInput(f"{path}: not a retiring-brokers file ({type(exc).__name__}: {exc}); fix it or move it "
                               "away (it lists the brokers later plans must not use)") from None
        return cls(path, clusters)

    def save(self) -> None:
        write_json_atomic(self.path, {"version": 1, "clusters": {
            cid: {str(b): {k: v for k, v in asdict(e).items() if k != "broker"} for b, e in sorted(entries.items())}
            for cid, entries in sorted(self.clusters.items()) if entries}})

    def of(self, cluster_id: str) -> dict[int, RetiringBroker]:
        return dict(self.clusters.get(cluster_id, {}))

    def add(self, cluster_id: str, brokers: Iterable[int], by: str, why: str, stage: str = DRAINED,
            run_folder: str = "") -> list[int]:
        """Mark ``brokers`` retiring at ``stage``; returns the new ones. One already listed keeps its
        first record, except that an ``approved`` one becomes ``drained`` (with this ``why``)."""
        entries = self.clusters.setdefault(cluster_id, {})
        new = [b for b in sorted(set(brokers)) if b not in entries]
        for b in new:
            entries[b] = RetiringBroker(b, utc_now_iso(), by, why, stage, run_folder)
        for b in set(brokers) - set(new):
            if stage == DRAINED and entries[b].stage == APPROVED:
                entries[b] = replace(entries[b], why=why, stage=DRAINED)
        return new

    def release_run(self, cluster_id: str, run_folder: str) -> list[int]:
        """Release the brokers the run in ``run_folder`` recorded (its decommission was rejected,
        expired or rolled back); returns them."""
        entries = self.clusters.get(cluster_id, {})
        mine = [b for b, e in sorted(entries.items()) if run_folder and e.run_folder == run_folder]
        return self.release(cluster_id, mine)

    def release(self, cluster_id: str, brokers: Iterable[int]) -> list[int]:
        """Release ``brokers`` (plans may use them again); returns those that were retiring."""
        entries = self.clusters.get(cluster_id, {})
        return [b for b in sorted(set(brokers)) if entries.pop(b, None) is not None]


def cluster_id(client: KazooClient) -> str | None:
    """The cluster id Kafka stored in ``/cluster/id`` (``None``: no broker ever registered one)."""
    try:
        data, _ = client.retry(client.get, paths.CLUSTER_ID)
    except NoNodeError:
        return None
    return codecs.decode_cluster_id(data).id


@dataclass(frozen=True)
class Exclusion:
    """What :func:`exclude_from_snapshot` did: the brokers left out as destinations, and why."""

    excluded: tuple[RetiringBroker, ...]
    snapshot: Path

    def lines(self) -> list[str]:
        return [e.text() for e in self.excluded]


def refuse_named(named: Iterable[int], retiring: dict[int, RetiringBroker], what: str) -> None:
    """Refuse destinations a person named (``what``: the input, e.g. ``new_brokers``) that are retiring:
    named as retiring, with the fix — not as "not registered", which is what a planner that never
    sees them would say."""
    hits = sorted(set(named) & set(retiring))
    if hits:
        raise InvalidInput(f"{what}: broker(s) {hits} are retiring (" + "; ".join(retiring[b].text() for b in hits)
                           + f"): no plan places replicas on them; leave them out of {what}, or release them if they "
                             f"are back in service (kafka-runbook retiring release --broker {hits[0]})")


def exclude_from_snapshot(snapshot: str | Path, out: str | Path, retiring: dict[int, RetiringBroker],
                          removing: Iterable[int] = (), refuse_held: bool = True) -> Exclusion:
    """Copy ``snapshot`` (JSON lines) to ``out`` without the broker lines of the ``retiring`` brokers
    (except those this plan is ``removing``, which must stay registered to be drained).

    Refuses, writing nothing, when a drained retiring broker not being removed holds a replica (one
    whose decommission is approved but not drained keeps its replicas where they are);
    ``refuse_held=False`` (the stuck runbook's placer, an emergency) only leaves them out."""
    removing = set(removing)
    excluded = {b: e for b, e in retiring.items() if b not in removing}
    drained = {b for b, e in excluded.items() if e.stage == DRAINED and refuse_held}
    held: dict[int, int] = {}
    with open(snapshot, encoding="utf-8") as src:
        for line in src:
            if '"kind":"partition"' in line:
                doc = json.loads(line)
                if doc.get("kind") == "partition":
                    for r in set(doc.get("replicas") or []) | set(doc.get("adding") or []):
                        if r in drained:
                            held[r] = held.get(r, 0) + 1
    _refuse_held(held, excluded)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    with open(snapshot, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as dst:
        for line in src:
            if '"kind":"broker"' in line:
                try:
                    doc = json.loads(line)
                except ValueError:
                    raise InvalidPayload(f"{snapshot}: a broker line is not JSON") from None
                if doc.get("kind") == "broker" and int(doc["id"]) in excluded:
                    continue
            dst.write(line)
    tmp.replace(out)
    return Exclusion(tuple(excluded[b] for b in sorted(excluded)), out)


def _refuse_held(held: dict[int, int], excluded: dict[int, RetiringBroker]) -> None:
    """Refuse (naming each broker, its count and the fix) when a retiring broker still holds replicas."""
    if held:
        raise InvalidInput(
            "; ".join(f"broker {b} is retiring ({excluded[b].why}, {excluded[b].by}) but still holds {n} replica(s)"
                      for b, n in sorted(held.items()))
            + ": decommission it (add it to brokers_to_remove), or release it (kafka-runbook retiring release "
              f"--broker {min(held)}) if it is back in service; nothing was planned")


def exclude_from_model(snapshot: ClusterSnapshot, retiring: dict[int, RetiringBroker],
                       removing: Iterable[int] = ()) -> tuple[ClusterSnapshot, tuple[RetiringBroker, ...]]:
    """``snapshot`` without the ``retiring`` brokers (except those being removed), and the brokers left
    out: :func:`exclude_from_snapshot` for a snapshot read into the model (``kafka-runbook plan
    --zookeeper``). Refuses, as it does, when a drained retiring broker not being removed holds a replica."""
    removing = set(removing)
    excluded = {b: e for b, e in retiring.items() if b not in removing}
    if not excluded:
        return snapshot, ()
    drained = {b for b, e in excluded.items() if e.stage == DRAINED}
    held: dict[int, int] = {}
    for p in snapshot.partitions():
        for r in set(p.replicas) | set(p.adding):
            if r in drained:
                held[r] = held.get(r, 0) + 1
    _refuse_held(held, excluded)
    kept = {b: br for b, br in snapshot.brokers.items() if b not in excluded}
    return replace(snapshot, brokers=kept), tuple(excluded[b] for b in sorted(excluded))
