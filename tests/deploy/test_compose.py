"""docker-compose.yaml and docker/ checked without a Docker engine.

What can be known from the files alone: every image pinned, the services issue 7 asks for,
depends_on pointing at services that exist with conditions that can be met, health checks,
connection strings that agree with the service names, ports and chroot the containers really
use, broker ids and racks, the DAGs folder and the project on the path, the Spark connection
resolving (through the real Spark provider hook) to the master's service and port, and the
ZooKeeper health check command run against a real ZooKeeper.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kafka_zk.connect import parse_connect_string
from tests.deploy.compose_file import (COMPOSE_PATH, REPO, bind_source, command_words, depends_on,
                                       environment, image_ref, interpolate, is_one_shot, load,
                                       mounts)

AIRFLOW_COMMANDS = {"api-server", "scheduler", "dag-processor", "triggerer"}
REQUIRED = {"postgres", "airflow-init", "airflow-apiserver", "airflow-scheduler",
            "airflow-dag-processor", "airflow-triggerer", "zookeeper", "spark-master",
            "spark-worker"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load()


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def airflow_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in services.items() if command_words(s)[:1] and
            command_words(s)[0] in AIRFLOW_COMMANDS}


def brokers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {n: environment(s) for n, s in services.items() if "KAFKA_BROKER_ID" in environment(s)}


def zk_connection(services: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return json.loads(environment(services["airflow-scheduler"])["AIRFLOW_CONN_KAFKA_ZK"])


def spark_master_url(services: dict[str, dict[str, Any]]) -> str:
    master = services["spark-master"]
    assert command_words(master) == ["master"], "spark-master must run the master role"
    return f"spark://{master['hostname']}:{environment(master)['SPARK_MASTER_PORT']}"


def test_required_services_and_three_brokers(services: dict[str, dict[str, Any]]) -> None:
    assert REQUIRED <= set(services), f"missing services: {sorted(REQUIRED - set(services))}"
    assert len(brokers(services)) >= 3
    assert {command_words(s)[0] for s in airflow_services(services).values()} == AIRFLOW_COMMANDS


def test_every_value_interpolates_without_an_env_file() -> None:
    raw = COMPOSE_PATH.read_text(encoding="utf-8")
    for line in raw.splitlines():
        if "$" in line and not line.lstrip().startswith("#"):
            interpolate(line)  # raises on ${VAR} without default


def test_every_image_pinned_to_a_tag(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in services.items():
        assert "image" in svc, f"{name}: no image (a built service must name its image with a tag)"
        ref = image_ref(svc["image"])
        assert ref.tag or ref.digest, f"{name}: image {svc['image']!r} has no tag"
        assert ref.tag != "latest", f"{name}: image {svc['image']!r} uses latest"


def test_kafka_images_are_a_zookeeper_mode_release(services: dict[str, dict[str, Any]]) -> None:
    refs = {image_ref(services[n]["image"]) for n in [*brokers(services), "zookeeper"]}
    assert {r.tag for r in refs} and len({r.tag for r in refs}) == 1, f"one CP version: {refs}"
    tag = next(iter(refs)).tag
    assert all(r.name.startswith("confluentinc/cp-") for r in refs)
    # Confluent Platform 8.0 (Kafka 4.0) has no ZooKeeper mode; 5.4 is Kafka 2.4.
    major, minor = (int(x) for x in tag.split(".")[:2])
    assert (5, 4) <= (major, minor) < (8, 0), f"cp {tag} is not a Kafka 2.4+ ZooKeeper-mode release"


def test_project_image_built_from_the_pinned_airflow(services: dict[str, dict[str, Any]]) -> None:
    built = {n: s for n, s in services.items() if "build" in s}
    assert set(airflow_services(services)) <= set(built) and {"spark-master", "spark-worker"} <= set(built)
    assert len({s["image"] for s in built.values()}) == 1, "every built service names one image"
    for name, svc in built.items():
        assert Path(COMPOSE_PATH.parent / svc["build"]["context"]).resolve() == REPO, name
        assert svc["build"]["dockerfile"] == "docker/Dockerfile", name
    dockerfile = (REPO / "docker/Dockerfile").read_text(encoding="utf-8")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    airflow_pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("apache-airflow=="))
    version = airflow_pin.split("==")[1]
    assert re.search(rf"^FROM apache/airflow:{re.escape(version)}-python3\.11$", dockerfile, re.M)
    assert "3.11" in pyproject["project"]["requires-python"]
    install = re.search(r"RUN pip install(.*?)(?:\n\n|\Z)", dockerfile, re.S)
    assert install and "-c /opt/kafka-runbooks/constraints.txt" in install.group(1)
    assert f'"apache-airflow=={version}"' in install.group(1)
    ignored = (REPO / "docker/Dockerfile.dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", "runs"} <= set(ignored), "the build context would carry local state"


def test_depends_on_targets_exist_and_can_be_met(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in services.items():
        for dep, condition in depends_on(svc).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            target = services[dep]
            if condition == "service_healthy":
                assert "healthcheck" in target, f"{name} waits for {dep} to be healthy; it has no check"
            elif condition == "service_completed_successfully":
                assert is_one_shot(target), f"{name} waits for {dep} to finish; it restarts forever"
            else:
                pytest.fail(f"{name} -> {dep}: condition {condition!r}; wait for health or completion")
    order: list[str] = []
    visiting: set[str] = set()

    def visit(n: str) -> None:
        assert n not in visiting, f"depends_on cycle through {n}"
        if n in order:
            return
        visiting.add(n)
        for d in depends_on(services[n]):
            visit(d)
        visiting.discard(n)
        order.append(n)

    for n in services:
        visit(n)
    assert order.index("airflow-init") < order.index("airflow-scheduler")


def test_airflow_waits_for_its_database_and_init(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in airflow_services(services).items():
        deps = depends_on(svc)
        assert deps.get("postgres") == "service_healthy", name
        assert deps.get("airflow-init") == "service_completed_successfully", name
    sched = depends_on(services["airflow-scheduler"])
    for needed in ["zookeeper", "spark-master", *brokers(services)]:
        assert sched.get(needed) == "service_healthy", f"scheduler must wait for {needed}"


def test_health_checks_on_every_long_running_service(services: dict[str, dict[str, Any]]) -> None:
    one_shots = {n for n, s in services.items() if is_one_shot(s)}
    assert one_shots == {"airflow-init"}, f"only airflow-init may be one-shot, got {one_shots}"
    for name, svc in services.items():
        if name in one_shots:
            continue
        check = svc.get("healthcheck")
        assert check and not check.get("disable"), f"{name}: no health check"
        test = check["test"]
        assert isinstance(test, list) and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, name
        for key in ("interval", "timeout", "retries"):
            assert key in check, f"{name}: health check without {key}"


def test_executor_choice_is_consistent_and_explained(services: dict[str, dict[str, Any]]) -> None:
    executor = environment(services["airflow-scheduler"])["AIRFLOW__CORE__EXECUTOR"]
    if executor == "LocalExecutor":
        assert not {"redis", "airflow-worker"} & set(services)
        assert re.search(r"#\s*LocalExecutor: .*one host", COMPOSE_PATH.read_text(encoding="utf-8"))
    else:
        assert executor == "CeleryExecutor" and {"redis", "airflow-worker"} <= set(services)


def test_dags_folder_and_project_on_the_path(services: dict[str, dict[str, Any]]) -> None:
    assert (REPO / "dags").is_dir()
    for name, svc in airflow_services(services).items():
        env = environment(svc)
        by_target = {m.target: m for m in mounts(svc)}
        dags = by_target.get(env["AIRFLOW__CORE__DAGS_FOLDER"])
        assert dags and bind_source(dags) == REPO / "dags", f"{name}: ./dags not at the DAGs folder"
        path = env["PYTHONPATH"].split(":")
        project = [m for m in mounts(svc) if bind_source(m) == REPO]
        assert project and project[0].target in path, f"{name}: the project is not on PYTHONPATH"


def test_run_root_is_shared_with_the_spark_worker(services: dict[str, dict[str, Any]]) -> None:
    run_root = environment(services["airflow-scheduler"])["KAFKA_RUNBOOKS_RUN_ROOT"]
    worker = {m.target: m.source for m in mounts(services["spark-worker"])}
    for name, svc in airflow_services(services).items():
        ours = {m.target: m.source for m in mounts(svc)}
        assert run_root in ours, f"{name}: {run_root} is not mounted"
        assert ours[run_root] == worker.get(run_root), f"{name}: executors would not see {run_root}"


def test_zookeeper_connection_matches_the_brokers(services: dict[str, dict[str, Any]]) -> None:
    conn = zk_connection(services)
    assert conn["conn_type"] == "kafka_zookeeper"
    zk = services[conn["host"]]  # the host is the ZooKeeper service itself
    assert int(environment(zk)["ZOOKEEPER_CLIENT_PORT"]) == conn["port"]
    ours = parse_connect_string(f"{conn['host']}:{conn['port']}{conn['extra']['chroot']}")
    assert ours.chroot, "the cluster lives under a chroot; the connection must carry it"
    for name, env in brokers(services).items():
        theirs = parse_connect_string(env["KAFKA_ZOOKEEPER_CONNECT"])
        assert theirs == ours, f"{name}: zookeeper.connect {theirs} differs from the connection {ours}"
    values = {environment(s)[key] for s in airflow_services(services).values()
              for key in ("AIRFLOW_CONN_KAFKA_ZK", "AIRFLOW_CONN_KAFKA_ZOOKEEPER_DEFAULT")}
    assert len(values) == 1, "every Airflow component and both connection ids: one cluster"


def test_brokers_have_unique_ids_racks_and_own_listeners(services: dict[str, dict[str, Any]]) -> None:
    envs = brokers(services)
    ids = [int(e["KAFKA_BROKER_ID"]) for e in envs.values()]
    assert len(set(ids)) == len(ids), f"broker ids repeat: {ids}"
    racks = [e.get("KAFKA_BROKER_RACK", "").strip() for e in envs.values()]
    assert all(racks), "every broker needs broker.rack"
    assert len(set(racks)) >= 2, "racks must differ for rack-aware plans to mean anything"
    for name, env in envs.items():
        assert services[name]["hostname"] == name
        advertised = env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        assert f"PLAINTEXT://{name}:9092" in advertised, f"{name}: advertises {advertised}"
        for key in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_DEFAULT_REPLICATION_FACTOR"):
            assert int(env[key]) < len(envs), f"{name}: {key} leaves no broker to decommission"


def test_spark_connection_points_at_the_master(services: dict[str, dict[str, Any]]) -> None:
    conn = json.loads(environment(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert conn["conn_type"] == "spark"
    scheme, _, host = conn["host"].partition("://")
    assert scheme == "spark" and host in services and command_words(services[host]) == ["master"]
    assert f"spark://{host}:{conn['port']}" == spark_master_url(services)
    assert command_words(services["spark-worker"]) == ["worker", spark_master_url(services)]
    assert conn.get("extra", {}).get("deploy-mode", "client") == "client"  # Python apps: client


def test_spark_provider_resolves_the_connection_to_the_master(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    value = environment(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"]
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", value)
    hook = SparkSubmitHook(conn_id="spark_default")
    assert hook._connection["master"] == spark_master_url(services)


def test_spark_nodes_share_the_airflow_image_and_script(services: dict[str, dict[str, Any]]) -> None:
    image = services["airflow-scheduler"]["image"]
    for name in ("spark-master", "spark-worker", "spark-connect"):
        svc = services[name]
        assert svc["image"] == image, f"{name}: driver and executors need the same Python and code"
        entry = command_words(svc, "entrypoint")
        assert entry == ["bash", "/opt/kafka-runbooks/docker/spark-node.sh"], name
    script = REPO / "docker/spark-node.sh"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=10)
    for args in (["worker", "not-a-url"], ["worker"], ["connect"], ["connect", "sc://x:1"], ["driver"], []):
        bad = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=30)
        assert bad.returncode == 2 and "usage: spark-node.sh" in bad.stderr, args


def test_spark_connect_server_runs_on_the_master_and_the_connection_reaches_it(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from operators.plan.step import spark_target

    svc = services["spark-connect"]
    assert command_words(svc) == ["connect", spark_master_url(services)]
    port = int(environment(svc)["SPARK_CONNECT_PORT"])
    assert any(v.endswith(":/opt/airflow/runs") for v in svc["volumes"]), "the server reads the run folders"
    value = environment(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_CONNECT"]
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CONNECT", value)
    target = spark_target("spark_connect")
    assert target.remote == f"sc://spark-connect:{port}" and not target.submit
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", environment(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert spark_target("spark_default").submit            # the standalone master: spark-submit


def test_host_ports_loopback_only_and_unique(services: dict[str, dict[str, Any]]) -> None:
    seen: dict[str, str] = {}
    for name, svc in services.items():
        for port in svc.get("ports") or []:
            ip, host_port, _ = str(port).split(":")
            assert ip == "127.0.0.1", f"{name}: port {port} is not bound to loopback"
            assert host_port not in seen, f"{name} and {seen.get(host_port)} both publish {host_port}"
            seen[host_port] = name


def test_named_volumes_are_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, svc in compose["services"].items():
        for m in mounts(svc):
            if bind_source(m) is None:
                assert m.source in declared, f"{name}: volume {m.source} is not declared"


def test_zookeeper_health_check_against_a_real_zookeeper(services: dict[str, dict[str, Any]],
                                                          zk_server: Any) -> None:
    test = services["zookeeper"]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL" and "/2181" in test[1]
    assert "ruok" in environment(services["zookeeper"])["KAFKA_OPTS"]
    ok = subprocess.run(["/bin/sh", "-c", test[1].replace("/2181", f"/{zk_server.port}")],
                        capture_output=True, timeout=15)
    assert ok.returncode == 0, ok.stderr
    # A port nobody listens on (the server's port + 1 is not ours to assume free: use port 1).
    down = subprocess.run(["/bin/sh", "-c", test[1].replace("/2181", "/1")],
                          capture_output=True, timeout=15)
    assert down.returncode != 0
