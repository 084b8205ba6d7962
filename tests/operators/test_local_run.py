"""cli.local_run: the approval helper answers under CPU load without deadlocking.

The helper once hung at load ~10: its responder thread imported Airflow's API routes while the
main thread (``dag.test → clear → import_all_models``) imported models, and each waited on the
other's import lock. The race only exists on cold imports, so the run happens in a fresh
interpreter (its own copy of the metadata DB), beside a bounded CPU hog; a hang is caught by
the deadline and reported as such.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import new_chroot, zk_connection

pytestmark = [pytest.mark.airflow]
REPO = Path(__file__).resolve().parents[2]
HOG = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"
CHILD = """
import json, sys
from cli.local_run import configure_local_airflow, run_dag
configure_local_airflow(sys.argv[1])
r = run_dag("delete_topics", json.loads(sys.argv[2]), answer="Reject", approver="load.sre", answer_timeout=600)
print("RESULT " + json.dumps({"state": r.state, "tasks": r.task_states, "by": r.answered_by, "error": r.answer_error}))
"""
DEADLINE_S = 900   # a healthy run takes a few minutes on a loaded 2-core machine; a deadlock never ends


def test_an_approval_is_answered_under_cpu_load_from_a_cold_start(zk_server, tmp_path):
    home = tmp_path / "airflow"          # the child creates its own metadata DB there
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers={1: "a", 2: "b"})).start()
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(DEADLINE_S)])
    child = None
    try:
        cluster.create_topics({"t1": ({0: [1, 2]}, None, None)})
        conf = {"zk_conn_id": zk_connection(zk_server, chroot), "run_root": str(tmp_path / "runs"),
                "topics": ["t1"], "poll_interval_s": 0.2}
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(home), json.dumps(conf)], cwd=REPO,
                                 env={**os.environ, "KR_TEST_AIRFLOW_HOME": str(home)},
                                 stdout=subprocess.PIPE, stderr=(tmp_path / "child.err").open("w"), text=True)
        try:
            out, _ = child.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"run_dag(answer=...) did not finish within {DEADLINE_S}s under load: hung")
        lines = [line[7:] for line in out.splitlines() if line.startswith("RESULT ")]
        assert lines, "the child ended without a result: " + (tmp_path / "child.err").read_text()[-3000:]
        result = json.loads(lines[0])
        assert result["error"] is None and result["by"] == "load.sre"
        assert result["tasks"]["approve"] == "success" and result["tasks"]["delete_batches"] == "skipped"
        assert cluster.topic_names() == ["t1"]
    finally:
        for p in (child, hog):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        cluster.stop()
