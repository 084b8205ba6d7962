"""No layer imports one above it or beside it (the layers: README's Layout; issue 35's target: kafka_zk,
planning, formats, procedures, kafka_sim / replica_verify, spark_jobs, operators, cli, dags). The plan
job and the rehearsal are launched as child processes (procedures/child_process.py), so operators
import neither spark_jobs nor kafka_sim; procedures import no Airflow at all. Read from the source
with ``ast``, imports inside functions included, so an arrow hidden in a function body counts too;
a module loaded by name (``importlib.import_module``, ``__import__``) is an arrow too: only the places
listed in :data:`LOADS_BY_NAME` do it, and what each loads is checked against its layer like an import.
A layer's folder that does not exist (yet) has nothing to check."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: what each layer may not import (its own layer and those below it are allowed)
FORBIDDEN = {
    "kafka_zk": {"planning", "formats", "procedures", "kafka_sim", "spark_jobs", "replica_verify", "operators", "dags",
                 "cli", "airflow", "pyspark"},
    "planning": {"formats", "procedures", "kafka_sim", "spark_jobs", "replica_verify", "operators", "dags", "cli",
                 "airflow", "pyspark", "kazoo"},
    "formats": {"procedures", "kafka_sim", "spark_jobs", "replica_verify", "operators", "dags", "cli", "airflow",
                "pyspark", "kazoo"},
    "procedures": {"airflow", "kafka_sim", "spark_jobs", "replica_verify", "operators", "cli", "dags", "pyspark"},
    "kafka_sim": {"procedures", "spark_jobs", "replica_verify", "operators", "dags", "cli", "airflow", "pyspark"},
    "spark_jobs": {"procedures", "kafka_sim", "replica_verify", "operators", "dags", "cli", "airflow"},
    "operators": {"kafka_sim", "spark_jobs", "dags", "cli"},
}

#: the product's folders (tests, bench and scripts are not product code)
PRODUCT = ("kafka_zk", "planning", "formats", "procedures", "kafka_sim", "replica_verify", "spark_jobs", "operators",
           "cli", "dags")

#: the only modules that load code by name, and the package each may load from: the command line's
#: table of subcommands (one module each, imported when run) and the local runner, which imports a
#: runbook's file from dags/ for ``dag.test()`` (a dev/demo runner: cli is the one layer that may)
LOADS_BY_NAME = {"cli/main.py": "cli", "cli/local_run.py": "dags"}


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    loaded = {f"{LOADS_BY_NAME.get(rel(path), '?')}.*"} if loads_by_name(path) else set()
    return found | loaded


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name


def loads_by_name(path: Path) -> list[str]:
    """Where ``path`` loads a module by name: calls of ``import_module``, ``reload`` of importlib,
    ``__import__``, and any other mention of them (a loader passed around is a loader too)."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name in ("import_module", "__import__"):
            hits.append(f"{rel(path)}:{node.lineno} {name}")
    return hits


def product_files() -> list[Path]:
    return sorted(p for layer in PRODUCT for p in (REPO / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_or_beside_it(layer: str) -> None:
    wrong = sorted(f"{path.relative_to(REPO)} imports {module}"
                   for path in sorted((REPO / layer).rglob("*.py"))
                   for module in imports_of(path) if module.split(".")[0] in FORBIDDEN[layer])
    assert not wrong, wrong


def test_modules_are_loaded_by_name_only_where_listed() -> None:
    found = {rel(path) for path in product_files() if loads_by_name(path)}
    assert found == set(LOADS_BY_NAME), sorted(found)


def test_the_command_table_loads_only_command_modules() -> None:
    """cli/main.py's COMMANDS: every module it loads by name is a file of cli/ (an import in all but syntax)."""
    tree = ast.parse((REPO / "cli" / "main.py").read_text(encoding="utf-8"))
    [table] = [node.value for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)
               and getattr(node.target, "id", None) == "COMMANDS"]
    modules = [ast.literal_eval(v) for v in table.values]
    assert modules and all(m.startswith("cli.") and (REPO / (m.replace(".", "/") + ".py")).is_file()
                           for m in modules), modules


def test_the_checker_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from kafka_sim.cluster import EmulatedCluster\n    import spark_jobs.plan_job\n")
    assert imports_of(sample) == {"kafka_sim.cluster", "spark_jobs.plan_job"}


def test_the_checker_sees_a_module_loaded_by_name(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import importlib\n\ndef f(n):\n    return importlib.import_module(f'dags.{n}')\n\n"
                      "def g(n):\n    return __import__(n)\n")
    assert [hit.split(" ")[1] for hit in loads_by_name(sample)] == ["import_module", "__import__"]
    assert "?.*" in imports_of(sample)     # an unlisted loader: an arrow to an unknown place (the test above fails)


def test_every_procedure_loads_without_airflow_in_a_fresh_process() -> None:
    """What the imports above cannot see (a third-party package that pulls Airflow in, say): every
    module of procedures/ imported in a new interpreter leaves airflow, pyspark, the emulator, the
    plan job and operators unloaded."""
    names = sorted(".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                   for p in (REPO / "procedures").rglob("*.py"))
    code = ("import json, sys\n"
            "for name in json.loads(sys.argv[1]): __import__(name)\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(sys.argv[2])))))")
    banned = ["airflow", "pyspark", "kafka_sim", "spark_jobs", "operators", "cli", "dags"]
    out = subprocess.run([sys.executable, "-c", code, json.dumps(names), json.dumps(banned)], cwd=REPO,
                         capture_output=True, text=True, timeout=300, check=True)
    assert names and json.loads(out.stdout.splitlines()[-1]) == [], out.stdout
