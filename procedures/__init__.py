"""The procedures every runbook runs, without Airflow: the state machines and models (wave and
batch books, the roll engine, window specs and the guard, the approval policy, the report models)
that operators/ wraps for Airflow and cli/ runs directly. Imports kafka_zk (and planning, formats);
never airflow, kafka_sim, spark_jobs, operators (tests/test_layers.py)."""
