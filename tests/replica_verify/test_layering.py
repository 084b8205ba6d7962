"""replica_verify is not ZooKeeper code and sits below operators: it imports only the standard
library, kafka-python, itself, and the one input contract every tool shares (issue 26: one parser
per input) -- ``kafka_zk.validation`` and the errors it raises, both pure (standard library only).
Never the rest of kafka_zk (ZooKeeper I/O), kafka_sim, operators, dags or cli."""

import ast
from pathlib import Path

import replica_verify

FORBIDDEN = {"kafka_zk", "planning", "formats", "procedures", "kafka_sim", "spark_jobs", "operators", "dags", "cli", "airflow",
             "kazoo", "pyspark"}
SHARED_CONTRACT = {"kafka_zk.validation", "kafka_zk.errors"}


def _imports(path: Path, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_replica_verify_imports_no_layer_above_or_beside_it():
    root = Path(replica_verify.__file__).parent
    found = set().union(*(_imports(path) for path in root.glob("*.py")))
    wrong = {m for m in found - SHARED_CONTRACT if m.split(".")[0] in FORBIDDEN}
    assert not wrong, wrong
    assert "kafka" in {m.split(".")[0] for m in found}          # the protocol layer is kafka-python's


def test_the_shared_input_contract_is_pure():
    """What replica_verify may take from kafka_zk imports nothing but the standard library and itself
    when it is loaded (``errors.translate`` imports kazoo inside, for callers that touch ZooKeeper)."""
    root = Path(replica_verify.__file__).parent.parent
    for module in SHARED_CONTRACT:
        found = _imports(root / (module.replace(".", "/") + ".py"), top_level_only=True)
        assert {m.split(".")[0] for m in found} <= {"__future__", "re", "typing", "kafka_zk"}, (module, found)
        assert {m for m in found if m.startswith("kafka_zk")} <= SHARED_CONTRACT, (module, found)
