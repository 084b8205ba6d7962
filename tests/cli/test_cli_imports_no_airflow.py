"""The CLI's restart, rehearse and batch commands run without Airflow (issue 35).

Each command module is imported in a FRESH interpreter together with everything the project's code
it reaches can import — every ``import`` in those files, the ones inside functions too (a command
loads what it runs when it runs), followed through the project's own modules — and ``airflow``
must then be absent from ``sys.modules`` and named by none of those imports. The rehearsal child
(``kafka-runbook rehearse``) is one of them: it drives the executor core on an emulated copy, and
its copy opens no Kafka listener, so it does not load kafka-python either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

COMMANDS = ["cli.main", "cli.restart", "cli.rehearse", "cli.rehearsal_run", "cli.elect", "cli.topics",
            "cli.throttle", "cli.reassign"]

PROBE = r"""
import ast, importlib, importlib.util, json, sys
from pathlib import Path

repo = Path(sys.argv[1]).resolve()
todo, seen, named_airflow = [sys.argv[2]], set(), []
while todo:
    name = todo.pop()
    if name in seen:
        continue
    seen.add(name)
    importlib.import_module(name)
    spec = importlib.util.find_spec(name)
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    if (origin is None or repo not in origin.parents or origin.suffix != ".py"
            or "site-packages" in origin.parts):       # a venv inside the checkout (CI's .venv) is not ours
        continue                                   # not the project's code: its imports are its own
    for node in ast.walk(ast.parse(origin.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found = [node.module]
        elif isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        else:
            continue
        for mod in found:
            if mod.split(".")[0] == "airflow":
                named_airflow.append(f"{name}: {mod}")
            elif importlib.util.find_spec(mod.split(".")[0]) is not None:
                todo.append(mod)
print(json.dumps({"airflow_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "airflow")[:5],
                  "named_airflow": named_airflow, "kafka_loaded": "kafka" in sys.modules,
                  "modules": len(seen)}))
"""


def _probe(module: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(REPO), module], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", COMMANDS)
def test_the_command_and_all_it_can_import_load_no_airflow(module: str) -> None:
    seen = _probe(module)
    assert seen["named_airflow"] == [], seen["named_airflow"]
    assert seen["airflow_loaded"] == [], seen["airflow_loaded"]
    assert seen["modules"] > 1


def test_the_rehearsal_child_loads_neither_airflow_nor_kafka_python() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, cli.main, cli.rehearse, cli.rehearsal_run; "
                          "print(sorted({m.split('.')[0] for m in sys.modules} & {'airflow', 'kafka', 'pyspark'}))"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"
