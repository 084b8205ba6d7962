"""The real-Airflow harness's preload (tests/real_airflow.py): the settings module it writes imports
nothing itself, and a process that loaded it hands every module the served DAG files import to the
children it forks — what the LocalExecutor's workers and their task processes inherit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.real_airflow import REPO, dag_imports, preload_settings

CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
modules = json.loads(sys.argv[2])
import airflow_local_settings
before = [m for m in modules if m in sys.modules]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, json.dumps([m for m in modules if m not in sys.modules]).encode())
    os._exit(0)
os.close(w)
missing = json.loads(os.read(r, 65536))
os.waitpid(pid, 0)
print(json.dumps({"before": before, "missing_in_child": missing, "policies": airflow_local_settings.__all__}))
"""


def test_a_forked_child_inherits_every_module_the_dag_files_import_and_the_settings_load_nothing_early(
        tmp_path: Path) -> None:
    dag_ids = ("decommission_brokers", "delete_topics", "rolling_restart")
    modules = dag_imports(dag_ids)
    assert "operators.runbooks.reassignment" in modules and "operators.batches.runbook" in modules, modules
    assert "__future__" not in modules and len(modules) == len(set(modules))
    (tmp_path / "airflow_local_settings.py").write_text(preload_settings(modules))
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), json.dumps(modules)], capture_output=True,
                         text=True, cwd=REPO, timeout=300, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"before": [], "missing_in_child": [], "policies": []}, (seen, out.stderr[-2000:])
