"""A real Spark Connect server for the tests, started from the installed pyspark package on loopback.

pyspark 4 ships the server (``jars/spark-connect_*.jar``) and ``bin/spark-submit``; the server
runs ``local[2]`` in its own JVM, bound to 127.0.0.1 on a free port, as the docker-compose
``spark-connect`` service runs it against the standalone master. :func:`start` waits (bounded)
until a client session answers a query, and the caller stops it with :meth:`ConnectServer.stop`.

Failure: a server that does not answer within ``timeout`` seconds raises ``RuntimeError`` with
the tail of its log.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.real_airflow import free_port

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ConnectServer:
    process: subprocess.Popen
    port: int
    log: Path

    @property
    def address(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def _answers(address: str) -> bool:
    """A throw-away client in its own process runs one query on the server."""
    probe = ("from pyspark.sql import SparkSession; "
             f"s = SparkSession.builder.remote({address!r}).getOrCreate(); "
             "assert s.range(3).count() == 3; s.stop()")
    try:
        return subprocess.run([sys.executable, "-W", "ignore", "-c", probe], capture_output=True,
                              timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def start(workdir: Path, timeout: float = 300.0) -> ConnectServer:
    """Start a server (``workdir`` holds its log) and wait until it answers."""
    home = Path(pyspark.__file__).parent
    port = free_port()
    log = workdir / "spark-connect.log"
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "kafka-runbooks-test-connect",
           "--master", "local[2]", "--driver-memory", "1g",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"]
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(workdir))
    server = ConnectServer(process, port, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited with {process.returncode}:\n{server.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except OSError:
            time.sleep(0.5)
            continue
        if _answers(server.address):
            return server
        time.sleep(1)
    server.stop()
    raise RuntimeError(f"the Spark Connect server did not answer within {timeout:g}s:\n{server.log_tail()}")
