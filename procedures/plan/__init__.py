"""Plan inputs and checks without Airflow: the log-dirs source, broker removal, retiring brokers,
topic specs and their diff against the cluster, and what the declarative specs share (declarative.py)."""
