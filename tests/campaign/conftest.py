"""Fixtures of the fault campaign: the DAG tests' shared Airflow DB."""

from tests.dags.conftest import airflow_db  # noqa: F401 - the shared Airflow DB fixture
