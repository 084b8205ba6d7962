"""Leadership steps: demote the brokers to remove, and the final preferred-leader election.

**DemoteOperator** moves leadership off the brokers to remove *before* data moves, so clients
never lose their leader mid-copy; **ElectPreferredLeadersOperator** runs after the data moved and
the throttles are gone. Both are Airflow shells over :mod:`procedures.leadership` (what is
re-ordered and elected, in which batches, how each batch is waited on, a resumed run's node waited
on rather than rewritten); here are the session (the run's approval on its writer), the step's
``wait_timeout`` and :meth:`_ElectionSteps.poll_sleep`.

Failure: as :mod:`procedures.leadership`: :class:`TimeoutError` for a controller that does not
consume a node within ``wait_timeout``, :class:`ReassignmentInProgress` for a re-ordering blocked
by someone else's reassignment.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from planning.election import demoted_order, demotion_targets, reorder_batches
from operators.base import DecommissionStep, RunbookOperator
from procedures.leadership import Waits, demote, elect_preferred

__all__ = ["DemoteOperator", "ElectPreferredLeadersOperator", "demoted_order", "demotion_targets", "reorder_batches"]


class _ElectionSteps(RunbookOperator):
    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "wait_timeout")

    def __init__(self, *, wait_timeout: Any = 120.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wait_timeout = wait_timeout

    def poll_sleep(self, seconds: float) -> None:
        """The wait between polls of the controller's progress."""
        time.sleep(seconds)

    def _waits(self) -> Waits:
        return Waits(self.log, float(self.wait_timeout), self.poll_sleep)


class DemoteOperator(_ElectionSteps, DecommissionStep):
    """Re-order replica lists so removed brokers are last, then elect preferred leaders."""

    template_fields: Sequence[str] = (*_ElectionSteps.template_fields, "brokers_to_remove")

    ui_color = "#fde2e2"

    def execute(self, context: Any) -> dict:
        removed = self.removed
        with self.session(context) as (client, writer):
            return demote(client, writer, removed, self._waits())


class ElectPreferredLeadersOperator(_ElectionSteps):
    """Batched preferred-replica election of every partition not led by its preferred replica."""

    ui_color = "#e2f0d9"

    def execute(self, context: Any) -> dict:
        with self.session(context) as (client, writer):
            return elect_preferred(client, writer, None, self._waits())
