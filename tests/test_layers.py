"""No layer imports one above it or beside it (the project's guide; issue 26's acceptance: no
import from operators into kafka_sim, nor into spark_jobs — the plan job and the rehearsal are
launched as child processes, procedures/child_process.py). Read from the source with ``ast``,
imports inside functions included, so an arrow hidden in a function body counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: what each layer may not import (its own layer and those below it are allowed)
FORBIDDEN = {
    "kafka_zk": {"kafka_sim", "spark_jobs", "procedures", "operators", "dags", "cli", "airflow", "pyspark"},
    "kafka_sim": {"spark_jobs", "operators", "dags", "cli", "airflow", "pyspark"},
    "procedures": {"airflow", "kafka_sim", "spark_jobs", "operators", "cli", "dags", "pyspark"},
    "spark_jobs": {"kafka_sim", "operators", "dags", "cli", "airflow"},
    "operators": {"kafka_sim", "spark_jobs", "dags", "cli"},
}


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_or_beside_it(layer: str) -> None:
    wrong = sorted(f"{path.relative_to(REPO)} imports {module}"
                   for path in sorted((REPO / layer).rglob("*.py"))
                   for module in imports_of(path) if module.split(".")[0] in FORBIDDEN[layer])
    assert not wrong, wrong


def test_the_checker_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from kafka_sim.cluster import EmulatedCluster\n    import spark_jobs.plan_job\n")
    assert imports_of(sample) == {"kafka_sim.cluster", "spark_jobs.plan_job"}
