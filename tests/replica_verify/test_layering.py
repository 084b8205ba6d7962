"""replica_verify is not ZooKeeper code and sits below operators: it imports only the standard
library, kafka-python and itself (never kafka_zk, kafka_sim, operators, dags or cli)."""

import ast
from pathlib import Path

import replica_verify

ALLOWED_OWN = {"replica_verify"}
FORBIDDEN = {"kafka_zk", "kafka_sim", "spark_jobs", "operators", "dags", "cli", "airflow", "kazoo", "pyspark"}


def test_replica_verify_imports_no_layer_above_or_beside_it():
    root = Path(replica_verify.__file__).parent
    found = set()
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.split(".")[0])
    assert not found & FORBIDDEN, found & FORBIDDEN
    assert "kafka" in found          # the protocol layer is kafka-python's
