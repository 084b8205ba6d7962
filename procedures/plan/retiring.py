"""The runbooks' side of retiring brokers (:mod:`kafka_zk.retiring`): where the file is, what a run
records, and the plan input without them.

* The file: ``$KAFKA_RUNBOOKS_RETIRING_FILE``, else ``<run_root>/retiring_brokers.json`` (every
  runbook of a deployment shares the ``run_root`` Param's default, so they read the same file).
* :func:`note_retiring` (the snapshot step): the cluster's retiring brokers at snapshot time, into
  the run folder's ``retiring.json`` — what this run's plan excludes, for the plan step and the
  plan report.
* :func:`plan_input` (the plan step): the snapshot to plan from — the run's snapshot minus the
  retiring brokers (:func:`kafka_zk.retiring.exclude_from_snapshot`), refused when one still holds
  replicas and is not being removed by this plan.
* :func:`check_plan_avoids_retiring` (every plan, also one handed over with ``plan_from``): no
  partition's target lists a retiring broker.
* :func:`remember_approved` (a decommission's ``approve``, when approved): add its brokers to the
  file as ``approved`` — from then on every plan leaves them out, drained or not;
  :func:`release_run` (that approval rejected or expired; a rollback of that run approved): release
  what the run recorded; :func:`forget_restored` (a rollback's plan step): the brokers the run it
  undoes recorded are not excluded from the rollback's own plan.
* :func:`remember_drained` (``verify_drained``, after a decommission drained its brokers): mark
  them ``drained`` in the file (added if the approval did not record them).

Failure: :class:`~kafka_zk.errors.InvalidInput` naming the brokers and the fix (release them with
``kafka-runbook retiring release``, or remove them in this plan); nothing planned or written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.errors import InvalidInput
from kafka_zk.retiring import (APPROVED, DRAINED, RetiringBroker, RetiringFile, cluster_id, default_path,
                               exclude_from_snapshot)
from procedures.run_folder import RunFolder

RUN_FILE = "retiring.json"
PLAN_INPUT = "plan_input.jsonl"


def retiring_file(run_root: str | Path) -> Path:
    """Where the deployment keeps its retiring brokers (see module docstring)."""
    return default_path(run_root)


def note_retiring(folder: RunFolder, client: KazooClient, run_root: str | Path) -> dict:
    """Write the cluster's retiring brokers into ``retiring.json`` of the run; returns that document."""
    path = retiring_file(run_root)
    cid = cluster_id(client)
    entries = RetiringFile.load(path).of(cid) if cid is not None else {}
    doc = {"file": str(path), "cluster_id": cid,
           "brokers": {str(b): {"since": e.since, "by": e.by, "why": e.why, "stage": e.stage,
                                "run_folder": e.run_folder} for b, e in sorted(entries.items())}}
    folder.write_json(folder.root / RUN_FILE, doc)
    return doc


def run_retiring(folder: RunFolder) -> dict[int, RetiringBroker]:
    """The retiring brokers the snapshot step noted for this run (none when it noted nothing)."""
    doc = folder.read_json(folder.root / RUN_FILE) or {}
    return {int(b): RetiringBroker(int(b), e["since"], e["by"], e["why"], e.get("stage") or DRAINED,
                                   e.get("run_folder") or "")
            for b, e in (doc.get("brokers") or {}).items()}


def forget_restored(folder: RunFolder, restored_run: str | Path) -> list[int]:
    """A rollback of ``restored_run`` (a run folder) puts back what that run moved: the brokers it
    recorded as retiring are not excluded from this rollback's plan (``retiring.json`` rewritten
    without them); returns them. Released from the file when the rollback is approved."""
    doc = folder.read_json(folder.root / RUN_FILE)
    if not doc or not doc.get("brokers"):
        return []
    run = str(Path(restored_run).resolve())
    mine = sorted(int(b) for b, e in doc["brokers"].items() if e.get("run_folder") == run)
    if mine:
        doc["brokers"] = {b: e for b, e in doc["brokers"].items() if int(b) not in mine}
        doc["restored_by_this_rollback"] = mine
        folder.write_json(folder.root / RUN_FILE, doc)
    return mine


def plan_input(folder: RunFolder, removing: Iterable[int] = ()) -> Path:
    """The snapshot the planner reads: the run's own, or (retiring brokers noted) one without them."""
    retiring = run_retiring(folder)
    if not retiring:
        return folder.snapshot
    return exclude_from_snapshot(folder.snapshot, folder.root / PLAN_INPUT, retiring, removing).snapshot


def excluded_lines(folder: RunFolder, removing: Iterable[int] = ()) -> list[str]:
    """For the plan report: each broker kept out of this plan as a destination, and why."""
    removing = set(removing)
    return [e.text() for b, e in sorted(run_retiring(folder).items()) if b not in removing]


def check_plan_avoids_retiring(folder: RunFolder, targets: dict) -> None:
    """Refuse a plan (its ``targets``: partition → replicas) that places a replica on a retiring broker."""
    retiring = run_retiring(folder)
    bad = sorted({(str(tp), b) for tp, replicas in targets.items() for b in replicas if b in retiring})
    if bad:
        brokers = sorted({b for _, b in bad})
        raise InvalidInput(f"the plan places replicas on retiring broker(s) {brokers} "
                           f"({', '.join(f'{tp} on {b}' for tp, b in bad[:5])}): "
                           + "; ".join(retiring[b].text() for b in brokers)
                           + ". Re-plan (the planner leaves them out), or release them if they are back in service "
                             f"(kafka-runbook retiring release --broker {brokers[0]})")


def _cluster(client: KazooClient, what: str) -> str:
    cid = cluster_id(client)
    if cid is None:
        raise InvalidInput(f"{paths.CLUSTER_ID} does not exist: the {what} brokers cannot be recorded as retiring "
                           "(no Kafka broker registered a cluster id on this ZooKeeper; check the chroot)")
    return cid


def remember_drained(client: KazooClient, run_root: str | Path, brokers: Iterable[int], run: str,
                     run_folder: str = "") -> list[int]:
    """Mark the brokers a decommission drained ``drained`` in the retiring file; returns those newly added."""
    retiring = RetiringFile.load(retiring_file(run_root))
    added = retiring.add(_cluster(client, "drained"), brokers, by=run, stage=DRAINED, run_folder=run_folder,
                         why="drained by a decommission; excluded from later plans until released")
    retiring.save()
    return added


def remember_approved(client: KazooClient, run_root: str | Path, brokers: Iterable[int], run: str,
                      run_folder: str) -> list[int]:
    """Add the brokers of an approved decommission to the retiring file as ``approved``; returns the new ones."""
    retiring = RetiringFile.load(retiring_file(run_root))
    added = retiring.add(_cluster(client, "approved"), brokers, by=run, stage=APPROVED, run_folder=run_folder,
                         why="decommission approved, not yet drained; excluded from later plans until released")
    retiring.save()
    return added


def release_run(client: KazooClient, run_root: str | Path, run_folder: str | Path) -> list[int]:
    """Release the brokers the run in ``run_folder`` recorded as retiring; returns them (none: nothing written)."""
    cid = cluster_id(client)
    path = retiring_file(run_root)
    if cid is None or not path.is_file():
        return []
    retiring = RetiringFile.load(path)
    released = retiring.release_run(cid, str(Path(run_folder).resolve()))
    if released:
        retiring.save()
    return released
