"""cluster_health: a scheduled, read-only health check of a Kafka cluster through ZooKeeper.

Steps (task ids): check → propose, and check → should_hand_off → trigger_election (optional); then
report → alert. ``propose`` turns each anomaly a runbook repairs into a proposed run waiting for a
person's approval (:mod:`operators.runbooks.proposals`; never approved by the system).
Runs every ``KAFKA_HEALTH_INTERVAL_MINUTES`` (default 15, no catch-up) and on demand. Artifacts go to
``<run_root>/cluster_health/<run id>/``: ``health.json`` (the JSON summary), ``health_report.md``
and ``.html``. The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/cluster_health.md``.

Failure: ``alert`` fails the run when a finding reaches ``fail_on_severity`` (so Airflow's
alerting fires); ``check`` fails on a bad Param or an unreachable ZooKeeper.
"""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import Param

from kafka_zk.health import CHECKS, SEVERITIES
from operators.guides import runbook_guide
from operators.runbooks.health import HealthAlertOperator, HealthCheckOperator, HealthReportOperator, hand_off_wanted
from operators.runbooks.proposals import ProposeOperator
from operators.runbook_dag import run_root_param, runbook_dag, zk_conn_param

DAG_ID = "cluster_health"
INTERVAL_MINUTES = int(os.environ.get("KAFKA_HEALTH_INTERVAL_MINUTES", "15"))

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "leader_imbalance_pct": Param(10.0, type="number", minimum=0, maximum=100,
                                  description="Report a broker leading fewer of its preferred partitions than this "
                                              "(Kafka's leader.imbalance.per.broker.percentage, default 10)"),
    "stuck_reassignment_s": Param(3600, type="number", minimum=0,
                                  description="Report /admin/reassign_partitions (or adding/removing replicas) "
                                              "unchanged for longer than this many seconds"),
    "stuck_election_s": Param(300, type="number", minimum=0,
                              description="Report /admin/preferred_replica_election older than this many seconds"),
    "stuck_deletion_s": Param(600, type="number", minimum=0,
                              description="Report a topic marked for deletion for longer than this many seconds"),
    "default_min_isr": Param(1, type="integer", minimum=1,
                             description="The brokers' min.insync.replicas, used when neither the topic nor "
                                         "/config/brokers/<default> overrides it"),
    "severity_overrides": Param({}, type="object",
                                description="Optional severity per check, e.g. {\"at_min_isr\": \"info\"}; checks: "
                                            + ", ".join(CHECKS)),
    "fail_on_severity": Param("critical", type="string", enum=list(SEVERITIES),
                              description="Fail the run (alerting) when a finding is at least this severe; "
                                          "'ok' never fails"),
    "hand_off_election": Param(False, type="boolean",
                               description="Trigger preferred_leader_election (it still asks a human) on leader imbalance "
                                           "inside the maintenance window"),
    "maintenance_window": Param(None, type=["null", "string"],
                                description="UTC window for the hand-off: '<days> HH:MM-HH:MM', days '*' or "
                                            "Mon,Tue,...; e.g. 'Sat,Sun 02:00-05:00'"),
    "airflow_api_conn_id": Param("airflow_api", type=["null", "string"],
                                 description="Airflow Connection (http: host, port, login, password) of the account "
                                             "that proposes runs through Airflow's REST API; it triggers them, so it "
                                             "can never approve them. Not defined or empty: nothing is proposed"),
    "propose_broker_down": Param(True, type="boolean",
                                 description="Propose decommission_brokers of a broker down longer than "
                                             "broker_down_grace_s that still holds replicas"),
    "propose_skew": Param(True, type="boolean",
                          description="Propose rebalance when replica or preferred-leader counts stay beyond the "
                                      "targets for skew_persist_s"),
    "propose_disk": Param(True, type="boolean",
                          description="Propose rebalance (with capacity_file and the sizes read) when a broker's disk "
                                      "stays above disk_threshold_pct for skew_persist_s; needs capacity_file"),
    "propose_leaked_throttle": Param(True, type="boolean",
                                     description="Propose stuck_reassignment (its throttles fix) for throttles no run "
                                                 "of ours owns"),
    "propose_stuck_reassignment": Param(True, type="boolean",
                                        description="Propose stuck_reassignment for a reassignment stuck past "
                                                    "stuck_reassignment_s"),
    "broker_down_grace_s": Param(1800, type="number", minimum=0,
                                 description="A broker must be seen down this long before its decommission is proposed"),
    "skew_persist_s": Param(3600, type="number", minimum=0,
                            description="A skew or a full disk must be seen this long before a rebalance is proposed"),
    "proposal_cooldown_s": Param(86400, type="number", minimum=0,
                                 description="After a proposed run ended (done, rejected, expired), the same anomaly is "
                                             "not proposed again for this many seconds"),
    "target_replica_spread": Param(1, type="integer", minimum=0,
                                   description="Skew: replica counts per live broker differ by more than this "
                                               "(rebalance's target)"),
    "target_leader_spread": Param(1, type="integer", minimum=0,
                                  description="Skew: preferred-leader counts per live broker differ by more than this "
                                              "(rebalance's target)"),
    "capacity_file": Param(None, type=["null", "string"],
                           description="Broker disk capacity (Cruise Control's capacity JSON or {\"brokers\": {...}}); "
                                       "with the connection's log_dirs_source, disks above disk_threshold_pct are "
                                       "found and proposed for relief"),
    "disk_threshold_pct": Param(85, type="number", exclusiveMinimum=0, maximum=100,
                                description="A broker holding more than this % of its capacity is a full disk"),
    "proposal_conf": Param({}, type="object",
                           description="Conf added to the proposed runs, by runbook, e.g. {\"rebalance\": "
                                       "{\"throttle_bytes_per_sec\": 104857600, \"spark_conn_id\": \"spark_prod\"}}; "
                                       "runbooks: decommission_brokers, rebalance, stuck_reassignment"),
    "notify_conn_ids": Param([], type=["null", "array"], items={"type": "string"},
                             description="Connections the proposed runs notify (their approval request, once per "
                                         "proposal)"),
    "run_root": run_root_param("health.json, reports, the proposal ledger"),
}

with runbook_dag(
        DAG_ID, "Read-only health check: URP, offline, min ISR, leader imbalance, leaked throttles, stuck admin nodes",
        PARAMS, DOC_MD, schedule=timedelta(minutes=INTERVAL_MINUTES), tags=["health"],
) as dag:
    check = HealthCheckOperator(
        task_id="check", zk_conn_id="{{ params.zk_conn_id }}", run_root="{{ params.run_root }}",
        thresholds={"leader_imbalance_pct": "{{ params.leader_imbalance_pct }}",
                    "stuck_reassignment_s": "{{ params.stuck_reassignment_s }}",
                    "stuck_election_s": "{{ params.stuck_election_s }}",
                    "stuck_deletion_s": "{{ params.stuck_deletion_s }}",
                    "default_min_isr": "{{ params.default_min_isr }}",
                    "severity": "{{ params.severity_overrides }}"},
        hand_off="{{ params.hand_off_election }}", maintenance_window="{{ params.maintenance_window }}",
        fail_on_severity="{{ params.fail_on_severity }}",
        proposal_args={"target_replica_spread": "{{ params.target_replica_spread }}",
                       "target_leader_spread": "{{ params.target_leader_spread }}",
                       "capacity_file": "{{ params.capacity_file }}",
                       "disk_threshold_pct": "{{ params.disk_threshold_pct }}"})
    propose = ProposeOperator(
        task_id="propose", run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
        airflow_api_conn_id="{{ params.airflow_api_conn_id }}", notify_conn_ids="{{ params.notify_conn_ids }}",
        settings={"propose_broker_down": "{{ params.propose_broker_down }}",
                  "propose_skew": "{{ params.propose_skew }}", "propose_disk": "{{ params.propose_disk }}",
                  "propose_leaked_throttle": "{{ params.propose_leaked_throttle }}",
                  "propose_stuck_reassignment": "{{ params.propose_stuck_reassignment }}",
                  "broker_down_grace_s": "{{ params.broker_down_grace_s }}",
                  "skew_persist_s": "{{ params.skew_persist_s }}",
                  "proposal_cooldown_s": "{{ params.proposal_cooldown_s }}",
                  "proposal_conf": "{{ params.proposal_conf }}"})
    gate = ShortCircuitOperator(task_id="should_hand_off", python_callable=hand_off_wanted,
                                ignore_downstream_trigger_rules=False)
    trigger = TriggerDagRunOperator(
        task_id="trigger_election", trigger_dag_id="preferred_leader_election",
        conf={"zk_conn_id": "{{ params.zk_conn_id }}", "run_root": "{{ params.run_root }}"},
        wait_for_completion=False)
    report = HealthReportOperator(task_id="report", run_root="{{ params.run_root }}",
                                  zk_conn_id="{{ params.zk_conn_id }}",
                                  triggered_run_id="{{ ti.xcom_pull(task_ids='trigger_election', "
                                                   "key='trigger_run_id') }}",
                                  fail_on_severity="{{ params.fail_on_severity }}", trigger_rule="all_done")
    alert = HealthAlertOperator(task_id="alert", run_root="{{ params.run_root }}",
                                zk_conn_id="{{ params.zk_conn_id }}")

    check >> gate >> trigger >> report >> alert
    check >> propose >> report
