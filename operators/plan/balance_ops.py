"""The plan steps of the add_brokers and rebalance runbooks (subclasses of SparkPlanOperator).

* :class:`AddBrokersPlanOperator` (``--op add-brokers``): ``new_brokers`` must be registered
  (read from the run's snapshot before Spark starts) and must not be every registered broker; a
  plan copied with ``plan_from`` must be an add-brokers plan for exactly those brokers.
* :class:`RebalancePlanOperator` (``--op rebalance``): the move budget (``max_replicas_moved``,
  ``max_bytes_moved``; null = no cap) and the target spreads are checked as numbers of the right
  range; a byte budget without a ``sizes_file`` is refused (bytes would be unknown); a copied plan
  must be a rebalance with the same budget and targets.

Failure: :class:`InvalidInput` / :class:`BrokerNotAvailable` naming the Param and the fix, before
Spark starts and before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from kafka_zk.errors import BrokerNotAvailable, InvalidInput
from kafka_zk.retiring import refuse_named
from procedures.run_folder import RunFolder
from kafka_zk.validation import check_brokers_to_remove, parse_size
from procedures.plan.retiring import run_retiring
from operators.plan.step import SparkPlanOperator, read_plan_summary, snapshot_racks


def check_new_brokers(value: Any) -> list[int]:
    """``new_brokers`` as sorted broker ids (:func:`kafka_zk.validation.parse_broker_ids`)."""
    return check_brokers_to_remove(value, "new_brokers")


def _optional_size(value: Any, name: str) -> int | None:
    """A byte budget (:func:`kafka_zk.validation.parse_size`: bytes or e.g. 50GiB), or null for no cap."""
    return None if value in (None, "", "None") else parse_size(value, name)


def _optional_int(value: Any, name: str, minimum: int) -> int | None:
    if value in (None, "", "None"):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name}={value!r}: give a whole number (or null for no cap)") from None
    if number < minimum or number > 2**63 - 1:
        raise InvalidInput(f"{name}={number}: give a number from {minimum} to 2^63-1 (or null for no cap)")
    return number


class AddBrokersPlanOperator(SparkPlanOperator):
    """Plan moving a balanced share onto ``new_brokers`` (see module docstring)."""

    operation = "add-brokers"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "new_brokers")

    def __init__(self, *, new_brokers: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.new_brokers = new_brokers

    def check_inputs(self, folder: RunFolder) -> dict:
        new = check_new_brokers(self.new_brokers)
        refuse_named(new, run_retiring(folder), "new_brokers")
        if folder.snapshot.is_file():
            racks = snapshot_racks(folder.snapshot)
            missing = [b for b in new if b not in racks]
            if missing:
                raise BrokerNotAvailable(
                    f"new_brokers={new}: broker(s) {missing} are not registered under /brokers/ids (registered: "
                    f"{sorted(racks)}); start them first (they must be up to receive replicas), then run again")
            if len(racks) == len(new):
                raise InvalidInput(f"new_brokers={new}: these are all the registered brokers; name only the new ones")
        return {"new_brokers": new}

    def job_args(self) -> list[str]:
        return ["--brokers", ",".join(map(str, check_new_brokers(self.new_brokers)))]

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        summary = read_plan_summary(plan_dir, origin, self.operation)
        planned = sorted(int(b) for b in str((summary.get("params") or {}).get("brokers") or "").split(",") if b)
        new = check_new_brokers(self.new_brokers)
        if planned != new:
            raise InvalidInput(f"{origin}: that plan adds broker(s) {planned}, but this run's new_brokers={new}; set "
                               f"new_brokers={planned} to run that plan, or leave plan_from empty to plan now")


class RebalancePlanOperator(SparkPlanOperator):
    """Plan evening out the existing brokers under a move budget (see module docstring)."""

    operation = "rebalance"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "max_replicas_moved", "max_bytes_moved",
                                      "target_replica_spread", "target_bytes_spread_pct", "target_leader_spread")

    def __init__(self, *, max_replicas_moved: Any = None, max_bytes_moved: Any = None, target_replica_spread: Any = 1,
                 target_bytes_spread_pct: Any = 10, target_leader_spread: Any = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_replicas_moved = max_replicas_moved
        self.max_bytes_moved = max_bytes_moved
        self.target_replica_spread = target_replica_spread
        self.target_bytes_spread_pct = target_bytes_spread_pct
        self.target_leader_spread = target_leader_spread

    def _values(self) -> dict[str, Any]:
        replica_spread = _optional_int(self.target_replica_spread, "target_replica_spread", 0)
        leader_spread = _optional_int(self.target_leader_spread, "target_leader_spread", 0)
        try:
            pct = float(self.target_bytes_spread_pct)
        except (TypeError, ValueError):
            raise InvalidInput(f"target_bytes_spread_pct={self.target_bytes_spread_pct!r}: give a percentage, "
                               "e.g. 10") from None
        if not 0 <= pct <= 1000:
            raise InvalidInput(f"target_bytes_spread_pct={pct}: give a percentage from 0 to 1000, e.g. 10")
        return {"max_replicas": _optional_int(self.max_replicas_moved, "max_replicas_moved", 0),
                "max_bytes": _optional_size(self.max_bytes_moved, "max_bytes_moved"),
                "target_replica_spread": 1 if replica_spread is None else replica_spread,
                "target_leader_spread": 1 if leader_spread is None else leader_spread,
                "target_bytes_relative_spread": pct / 100}

    def check_inputs(self, folder: RunFolder) -> dict:
        values = self._values()
        sized = folder.partition_sizes.is_file() or folder.sizes.is_file()
        if values["max_bytes"] is not None and folder.snapshot.is_file() and not sized:
            raise InvalidInput(f"max_bytes_moved={values['max_bytes']}: a byte budget needs partition sizes; give "
                               "sizes_file (kafka-log-dirs.sh --describe output) or use max_replicas_moved")
        return {"budget": {"max_replicas_moved": values["max_replicas"], "max_bytes_moved": values["max_bytes"]}}

    def job_args(self) -> list[str]:
        v = self._values()
        args = ["--target-replica-spread", str(v["target_replica_spread"]),
                "--target-leader-spread", str(v["target_leader_spread"]),
                "--target-bytes-spread", repr(v["target_bytes_relative_spread"])]
        if v["max_replicas"] is not None:
            args += ["--max-replicas-moved", str(v["max_replicas"])]
        if v["max_bytes"] is not None:
            args += ["--max-bytes-moved", str(v["max_bytes"])]
        return args

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        summary = read_plan_summary(plan_dir, origin, self.operation)
        v = self._values()
        want = {"max_replicas": "" if v["max_replicas"] is None else str(v["max_replicas"]),
                "max_bytes": "" if v["max_bytes"] is None else str(v["max_bytes"])}
        got = {k: str((summary.get("params") or {}).get(k, "")) for k in want}
        if got != want:
            raise InvalidInput(f"{origin}: that plan was made with budget {got}, this run's is {want} "
                               "(max_replicas_moved, max_bytes_moved); give the same budget, or leave plan_from "
                               "empty to plan now")
