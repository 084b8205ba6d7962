"""The Airflow UI as the place an SRE works (issue 24): every runbook's trigger form submits with its
defaults plus the required fields, and a decommission is followed from its form to its final report
by clicks — in Chromium, on a real Airflow 3.3 (API server, scheduler, DAG processor, triggerer; two
users with passwords), one stack for the module.

*Forms.* Alice signs in through the login page, opens each DAG's Trigger dialog, types only what the
form marks as required, and presses Trigger. The form must accept it (an empty non-nullable text
Param kept the button disabled before), the API server must create the run (it validates the conf
against the Params), and the run's conf must be every Param's default plus what was typed. These
DAGs stay paused ("Unpause on trigger" cleared): their runs wait queued and touch no cluster.

*A decommission, followed by clicks.* Alice triggers ``decommission_brokers`` from its form the same
way (only ``brokers_to_remove``), unpaused, on an emulated cluster (the deployment's default
connections point at it; Spark plans in local mode). Bob signs in, opens the approval (its text: the
link only, no worker path, and a readable expiry), a click on its link reaches the plan report, and
he approves. While the waves copy, he opens the run's page, clicks the approve task's square in the
grid, its Details tab, and "Live progress": the progress page, which refreshes itself; two
screenshots, at least two more partitions moved between them. At the end the run's page shows the
note saying how it ended, and "Final report" on the final_report task's Details tab reaches the
report. Every page of the reports app answers 401 without a login. (The extra links are on the
Details tab only; ``execute_waves`` has its links only once it has finished, see docs/ui.md.)
Screenshots: test-artifacts/ui-*.png.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from procedures.reports.locations import report_url
from tests.airflow_ui import AirflowBrowser
from tests.conftest import new_chroot
from tests.dags.conftest import plain_client
from tests.dags.scenario import RACKS, TOPICS, assignment
from tests.real_airflow import RealAirflow, status_without_login

# a shared 2-core machine: twelve forms through a real UI, or a Spark plan and three waves, may take longer
# than the suite's 900 s per test (measured: 260 s and 320 s loaded). method="thread": Playwright's sync
# API runs its event loop on the main thread, where pytest-timeout's SIGALRM can land in the loop's own
# callbacks and be swallowed; the thread method dumps every stack and ends the worker (xdist replaces it).
pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow, pytest.mark.timeout(1200, method="thread")]

REPO = Path(__file__).resolve().parents[2]
DAG_IDS = tuple(sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__"))
FOLLOWED = "decommission_brokers"
REASSIGNMENT = '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,3]}]}'

#: What a person types into the fields the form marks required: param -> (typed text, value in the conf).
REQUIRED: dict[str, dict[str, tuple[str, object]]] = {
    "decommission_brokers": {"brokers_to_remove": ("6", "6")},
    "add_brokers": {"new_brokers": ("7, 8", "7, 8")},
    "move_topics": {"topics": ("orders\nevents", ["orders", "events"]), "brokers": ("1, 2, 3", "1, 2, 3")},
    "change_replication_factor": {"topics": ("orders", ["orders"])},
    "reassign_partitions": {"reassignment_json": (REASSIGNMENT, REASSIGNMENT)},
}


def defaults(dag_id: str) -> dict[str, object]:
    """The DAG file's Param defaults, from a fresh import: an earlier ``dag.test()`` in this worker
    writes its run's conf into the imported DAG's Params (see :func:`cli.local_run.load_dag`)."""
    from cli.local_run import load_dag

    dag = load_dag(dag_id)
    return {name: dag.params.get_param(name).value for name in dag.params}


@pytest.fixture(scope="module")
def stack(zk_server, tmp_path_factory) -> Iterator[tuple[RealAirflow, KazooClient, Path]]:
    """A real Airflow whose default connections point at an emulated cluster (the scenario's six
    brokers and 11 partitions on broker 6, copying at a pace a person can watch)."""
    home = tmp_path_factory.mktemp("ui")
    chroot = new_chroot(zk_server, prefix="/ui")
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, speed=30.0, seed=0)).start()
    cluster.create_topics({name: (a, sizes, None) for name, (a, sizes) in TOPICS.items()})
    connections = {
        "kafka_zookeeper_default": {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                    "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}},
        "spark_default": {"conn_type": "spark", "host": "local[*]"}}
    extra_env = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True", "KAFKA_RUNBOOKS_RUN_ROOT": str(home / "runs")}
    zk = plain_client(zk_server, chroot)
    try:
        with RealAirflow(home / "airflow", DAG_IDS, connections, extra_env=extra_env,
                         users=("alice", "bob")) as airflow:
            for dag_id in DAG_IDS:
                airflow.wait_dag(dag_id, unpause=False)
            yield airflow, zk, home / "runs"
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def _check_run(airflow: RealAirflow, dag_id: str, run_id: str, run_root: Path, state: str | None) -> None:
    run = airflow.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}", as_user="alice")
    fields = REQUIRED.get(dag_id, {})
    expected = defaults(dag_id) | {k: v[1] for k, v in fields.items()}
    if "run_root" in expected:                       # the deployment default, from the servers' environment
        expected["run_root"] = str(run_root)
    assert run["triggering_user_name"] == "alice", run
    assert state is None or run["state"] == state, run
    assert json.loads(json.dumps(run["conf"])) == json.loads(json.dumps(expected)), (dag_id, run["conf"])


def test_every_trigger_form_submits_with_its_defaults_plus_the_required_fields(stack) -> None:
    airflow, _zk, run_root = stack
    assert len(DAG_IDS) >= 12 and set(REQUIRED) <= set(DAG_IDS)
    with AirflowBrowser(airflow, "alice", "ui-forms") as ui:
        for dag_id in DAG_IDS:
            if dag_id == FOLLOWED:
                continue                              # triggered from its form by the next test, unpaused
            fields = REQUIRED.get(dag_id, {})
            enabled_before, run_id = ui.trigger_from_form(dag_id, {k: v[0] for k, v in fields.items()}, unpause=False)
            assert enabled_before is not bool(fields), (
                f"{dag_id}: with nothing typed the Trigger button was {'enabled' if enabled_before else 'disabled'}; "
                f"required fields: {sorted(fields)}")
            _check_run(airflow, dag_id, run_id, run_root, "queued")
            ui.shot(f"run-{dag_id}")                  # the DAG's page, the new run queued in its grid


def _moved(text: str) -> tuple[int, int] | None:
    """(moved, total) from the progress page's "n/m partitions moved", or None before the first wave."""
    m = re.search(r"(\d+)/(\d+) partitions moved", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def test_a_decommission_is_followed_from_its_form_to_the_final_report_by_clicks(stack) -> None:
    airflow, zk, run_root = stack
    with AirflowBrowser(airflow, "alice", "ui-run") as alice:
        enabled_before, run_id = alice.trigger_from_form(FOLLOWED, {"brokers_to_remove": "6"}, unpause=True)
    assert not enabled_before
    _check_run(airflow, FOLLOWED, run_id, run_root, None)
    airflow.wait_task_state(FOLLOWED, run_id, "approve", "awaiting_input", 480)
    base = report_url(f"http://127.0.0.1:{airflow.port}", FOLLOWED, run_id)   # run id quoted, as the links have it
    with AirflowBrowser(airflow, "bob", "ui-run") as bob:
        # the approval, as Bob sees it: its link reaches the plan report (Airflow's login applies)
        page = bob.page
        page.goto(f"{bob.base}/dags/{FOLLOWED}/runs/{run_id}/tasks/approve/required_actions")
        link = page.get_by_role("link", name="Open the plan report")
        link.wait_for()
        bob.shot("approval")
        text = page.inner_text("body")
        assert re.search(r"expires at \d\d:\d\d UTC.*, in 12 h", text) and str(run_root) not in text, text
        report = bob.follow(link)
        report.get_by_text("plan hash", exact=False).first.wait_for()
        assert report.url == base + "plan_report.html"
        bob.shot("plan-report", report)
        airflow.answer(FOLLOWED, run_id, "approve", "Approve", as_user="bob")

        # while the waves copy: from the run's page, the approve task's "Live progress" link
        airflow.wait_task_state(FOLLOWED, run_id, "execute_waves", ("running", "deferred"), 300)
        bob.open_run(FOLLOWED, run_id)
        bob.open_task_from_run(FOLLOWED, run_id, "approve")
        progress = bob.follow(bob.extra_link("Live progress"))
        assert progress.url == base + "progress"
        first = _moved(bob.wait_text(progress, lambda t: _moved(t) is not None, 240, "a wave on the progress page"))
        bob.shot("progress-1", progress)
        want = min(first[0] + 2, first[1])          # a change a person sees on the bar
        second = _moved(bob.wait_text(progress, lambda t: (_moved(t) or (0, 0))[0] >= want, 480,
                                      f"{want} partitions moved"))   # brought by the page's own refresh
        bob.shot("progress-2", progress)
        assert second[0] >= want > first[0] and second[1] == first[1] == 11, (first, second)

        # at the end: the run says how it ended, and the final_report task links the report
        st = airflow.wait_run(FOLLOWED, run_id, timeout=600)
        assert st.state == "success", st.tasks
        assert not any(6 in r for r in assignment(zk).values())
        bob.open_run(FOLLOWED, run_id)
        bob.wait_text(page, lambda t: "SUCCEEDED: " in t, 120, "the run's note")
        bob.shot("run-end")
        bob.open_task_from_run(FOLLOWED, run_id, "final_report")
        final = bob.follow(bob.extra_link("Final report"))
        assert final.url == base + "final_report.html"
        final.get_by_text("brokers 6", exact=False).first.wait_for()
        bob.shot("final-report", final)
        page.goto(base + "progress")
        end = page.inner_text("body")
        assert "no longer active" in end and _moved(end) == (11, 11), end
        bob.shot("progress-end")
    for name in ("", "progress", "plan_report.html", "final_report.html"):
        assert status_without_login(base + name) == 401, name
