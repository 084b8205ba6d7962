"""The steps of the broker_configs runbook: diff a broker config spec against the cluster, approve,
apply one entity at a time, read back.

The shared steps of a declarative runbook (:mod:`operators.runbooks.declarative`) over the
procedure :mod:`procedures.broker_configs` (spec, diff, apply, read-back; no Airflow):

* **BrokerConfigDiffOperator** — the spec (refused with line, problem and fix) and its diff against
  the live overrides, ``broker_config_diff.json`` / ``broker_config_diff.md`` (the plan report);
* **BrokerConfigsApprovalOperator** — the diff approved by another person in time; skipped when
  the diff writes nothing;
* **ApplyBrokerConfigsOperator** — the diff recomputed (stale → refused, nothing written), then per
  entity one write of ``/config/brokers/<entity>`` and one change notification (``applied.json``);
* **VerifyBrokerConfigsOperator** — the overrides read back as the spec says (``verify.json``);
* **BrokerConfigsReportOperator** — the outcome contract filled.

Failure: :class:`~procedures.broker_configs.spec.BrokerConfigSpecError`,
:class:`~kafka_zk.errors.InvalidInput` (refusals), :class:`~kafka_zk.errors.StalePlan`,
:class:`~operators.runbooks.declarative.ChangesNotVisible`.
"""

from __future__ import annotations

from typing import Any

from operators.runbooks.declarative import (SpecApplyOperator, SpecApprovalOperator, SpecDiffOperator,
                                            SpecReportOperator, SpecVerifyOperator)
from procedures.broker_configs.run import apply_changes, plan_changes, unverified
from procedures.broker_configs.spec import parse_broker_config_spec


class _BrokerConfigs:
    """The broker_configs runbook's files, words and procedure, for every step."""

    NAME = "broker_configs"
    SPEC = "broker_config_spec.yaml"
    DIFF = "broker_config_diff.json"
    DIFF_MD = "broker_config_diff.md"
    TITLE = "Broker configs: diff against the cluster"
    SEEN_BY = "the read-back of /config/brokers"
    SUBJECT = "Broker configs: approve the diff"
    ALLOWS = ("for each entity listed, one write of its /config/brokers node with exactly the keys set and "
              "deleted shown (every other key kept), then one change notification.")
    WHAT = "Broker configs"

    def parse(self, text: str, where: str) -> Any:
        return parse_broker_config_spec(text, where)

    def diff(self, client: Any, spec: Any) -> Any:
        return plan_changes(client, spec)

    def apply(self, client: Any, writer: Any, spec: Any, approved: dict) -> list[dict]:
        return apply_changes(writer, spec, approved)

    def missing(self, client: Any, approved: dict) -> list[str]:
        return unverified(client, approved)


class BrokerConfigDiffOperator(_BrokerConfigs, SpecDiffOperator):
    """Parse the spec and write its diff against the live overrides (the plan report)."""


class BrokerConfigsApprovalOperator(_BrokerConfigs, SpecApprovalOperator):
    """The diff, approved by another person in time (skipped when it writes nothing)."""


class ApplyBrokerConfigsOperator(_BrokerConfigs, SpecApplyOperator):
    """Apply the approved diff, one entity at a time, if the cluster still gives the same diff."""


class VerifyBrokerConfigsOperator(_BrokerConfigs, SpecVerifyOperator):
    """The overrides read back as the approved diff says."""


class BrokerConfigsReportOperator(_BrokerConfigs, SpecReportOperator):
    """The broker configs' part of the outcome contract."""


STEPS = (BrokerConfigDiffOperator, BrokerConfigsApprovalOperator, ApplyBrokerConfigsOperator,
         VerifyBrokerConfigsOperator, BrokerConfigsReportOperator)
