"""Shared fixtures: one real ZooKeeper server per test run, a fresh chroot per test.

The server is Debian's ZooKeeper started by :mod:`kafka_sim.zookeeper_server` on a free
127.0.0.1 port. ``zk_connect`` is a chrooted connect string (``127.0.0.1:port/t<uuid>``) whose
chroot exists; ``zk`` is a plain kazoo client on it (tests that check our admin layer read
ZooKeeper back with it, never with our own code).
"""

from __future__ import annotations

import uuid
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_sim.zookeeper_server import EmbeddedZooKeeper


@pytest.fixture(scope="session")
def zk_server() -> Iterator[EmbeddedZooKeeper]:
    with EmbeddedZooKeeper() as server:
        yield server


def new_chroot(zk_server: EmbeddedZooKeeper, prefix: str = "/t") -> str:
    """Create a fresh, empty chroot on the shared server and return it."""
    chroot = f"{prefix}{uuid.uuid4().hex[:12]}"
    root = KazooClient(hosts=zk_server.connect_string, timeout=10)
    root.start(timeout=10)
    try:
        root.create(chroot)
    finally:
        root.stop()
        root.close()
    return chroot


@pytest.fixture
def zk_chroot(zk_server: EmbeddedZooKeeper) -> str:
    return new_chroot(zk_server)


@pytest.fixture
def zk_connect(zk_server: EmbeddedZooKeeper, zk_chroot: str) -> str:
    return f"{zk_server.connect_string}{zk_chroot}"


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="session")
def zk_proxies(zk_server: EmbeddedZooKeeper):
    """``{"3.5": ZkProxy, "3.4": ZkProxy}``: the real server made to look like an old one
    (tests/zk_proxy.py), one proxy per mode for the whole run."""
    from tests.zk_proxy import ZkProxy

    proxies = {m: ZkProxy((zk_server.host, zk_server.port), m) for m in ("3.5", "3.4")}
    yield proxies
    for proxy in proxies.values():
        proxy.close()


@pytest.fixture(params=["3.5", "3.4"])
def old_zk(request, zk_proxies):
    """The proxy of one old-server mode; fails the test if any request was refused by it
    (an opcode the old server lacks: the server would have closed our connection)."""
    proxy = zk_proxies[request.param]
    before = len(proxy.refused)
    yield proxy
    assert proxy.refused[before:] == [], f"ZooKeeper {proxy.mode} would have closed the session"


@pytest.fixture
def old_zk_connect(old_zk, zk_chroot: str) -> str:
    """A chrooted connect string through the old-server proxy (the chroot of ``zk``)."""
    return f"{old_zk.hosts}{zk_chroot}"


from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile(__import__("os").environ.get("HYPOTHESIS_PROFILE", "dev"))


# --- Airflow (helper H4): an isolated AIRFLOW_HOME, set before any test imports airflow. ---
from tests.airflow_env import configure_env  # noqa: E402

configure_env()

# one migrated metadata DB per run for the real-Airflow stacks, shared by the xdist workers (made in
# the controller's temp folder: the workers inherit its name)
from tests.airflow_db_template import configure_templates  # noqa: E402

configure_templates()


#: Test files by measured wall time, slowest first (``--durations=0`` of a full run, per file).
#: pytest-xdist hands whole files to workers in collection order, so these start first instead of
#: ending the run alone on one worker; every other file keeps its place after them.
SLOWEST_FIRST = (    # seconds per file, a full run on 2026-11-26 (4 workers, 2 loaded cores): the
    # longest files start first so no long file starts last and runs alone at the end
    "tests/dags/test_ui_trigger_forms.py",                            # 668 s; 604 s beside the walk (2026-12-02)
    "tests/dags/test_ui_every_runbook_says_how_it_ended.py",          # 441-704 s alone at load 3-14 (one Airflow; issue 36)
    "tests/campaign/test_fault_campaign.py",                          # 608 s
    "tests/dags/test_real_airflow_proposals.py",                      # 606 s (alone, -n 0, 2026-12-02)
    "tests/dags/test_decommission_brokers.py",                        # 540 s
    "tests/dags/test_reassign_partitions.py",                         # 448 s
    "tests/dags/test_decommission_windows.py",                        # 426 s
    "tests/dags/test_topic_changes.py",                               # 418 s
    "tests/dags/test_run_outcomes.py",                                # 399 s
    "tests/dags/test_batch_windows.py",                               # 386 s
    "tests/dags/test_real_airflow_race.py",                           # 352 s
    "tests/dags/test_real_airflow_answer_before_park.py",             # 340 s (alone, -n 0, 2026-12-02)
    "tests/dags/test_rollback.py",                                    # 310 s
    "tests/campaign/test_roll_fault_campaign.py",                     # ~280 s (new, measured alone)
    "tests/dags/test_change_replication_factor.py",                   # 266 s
    "tests/dags/test_rebalance.py",                                   # 266 s
    "tests/secured/test_secured_runbooks.py",                         # 247 s
    "tests/dags/test_move_topics.py",                                 # 247 s
    "tests/dags/test_add_brokers.py",                                 # 246 s
    "tests/spark_jobs/test_plan_job_spark.py",                        # 222 s
    "tests/spark_jobs/test_capacity_job.py",                          # 208 s
    "tests/dags/test_approval_bypass.py",                             # 207 s
    "tests/dags/test_real_airflow_batches.py",                        # 200 s
    "tests/dags/test_real_airflow_approval_gate.py",                  # 197 s
    "tests/dags/test_rolling_restart_windows.py",                     # 185 s
    "tests/dags/test_delete_topics.py",                               # 185 s
    "tests/dags/test_rolling_restart.py",                             # 158 s
    "tests/spark_jobs/test_plan_engines.py",                          # 152 s
    "tests/operators/test_local_run.py",                              # 144 s
    "tests/dags/test_retiring_brokers.py",                            # 127 s
    "tests/spark_jobs/test_spark_connect.py",                         # 123 s
    "tests/dags/test_real_airflow_approval_expiry.py",                # 115 s
    "tests/dags/test_preferred_leader_election.py",                   # 111 s
    "tests/dags/test_stuck_reassignment.py",                          # 97 s
    "tests/dags/test_window_factor_stop.py",                          # ~160 s (new, measured alone)
    "tests/dags/test_decommission_dead_broker.py",                    # ~100 s (new, measured alone)
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_unconfigure(config) -> None:
    """After the run, library threads (kazoo reconnect loops of clients cached by Airflow task
    code, py4j finalizers) may still log while the interpreter exits and pytest has closed its
    capture streams; do not print tracebacks for those log calls."""
    import logging

    logging.raiseExceptions = False
