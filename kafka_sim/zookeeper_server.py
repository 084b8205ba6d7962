"""A private ZooKeeper server for tests, benchmarks, the demo and rehearsals.

Runs Debian's ``zookeeper`` package (jars under /usr/share/java) as a standalone server bound
to 127.0.0.1 on a free port, with its own temporary data dir; waits until it serves sessions
(``srvr``) and the server on the port is this one (``conf`` names its data dir; a free port taken
by another server first is given up for a new one); stops it by its own pid (SIGTERM, then SIGKILL) and removes the data dir. The server never outlives
the process that started it: a guard (a shell waiting on a pipe only the starter holds) stops it
when the starter ends without :meth:`EmbeddedZooKeeper.stop` — a rehearsal child killed at its
step's time limit (SIGKILL runs no cleanup) would otherwise leave a 512 MB JVM on the Airflow worker
for good.

Secured mode (``sasl_users={"kafka": "secret", ...}``): the server reads a JAAS file (its
``Server`` section lists the DIGEST-MD5 users), authenticates clients with
``SASLAuthenticationProvider`` and requires SASL of every session
(``sessionRequireClientSASLAuth=true``, ZooKeeper 3.6+; 3.8 maps it to
``enforce.auth.schemes=sasl``): an unauthenticated session or a wrong password is refused.
With ``require_sasl=False`` SASL is offered but not required (ZooKeeper's default, the common
Kafka setup where ``zookeeper.set.acl=true`` protects the znodes): an unauthenticated session is
accepted and sees what Kafka's ACLs let the world read. The
JAAS file lives in the private data dir (mode 0600) and is removed with it.

The JVM's heap is ``heap`` (``-Xmx``, default 512m: every test cluster fits; the benchmarks'
million-partition cluster, two million znodes, needs a few GB).

``lean=True`` (a rehearsal's private server, :mod:`cli.rehearsal_run`) runs the same server with
:data:`LEAN_JVM_OPTIONS`: the serial collector and the client compiler only (a short-lived JVM on two
cores spends less on collector threads and compiling than it gains), requests handled on the
connection's selector thread (no hand-off to a worker pool), and no data-tree digest (a check
between ensemble members; a standalone server has none). What it serves and in what order is
ZooKeeper's, unchanged; its CPU per request is ~40 % lower (BENCHMARKS.md, "Rehearsals", 2026-12-02).

Fails with :class:`EmbeddedZooKeeperError` naming the missing piece (Java, the package), a
heap that is not a size, or the server's last log lines when it does not come up within the timeout.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping

from kafka_zk.server_features import four_letter_word

__all__ = ["EmbeddedZooKeeper", "EmbeddedZooKeeperError", "four_letter_word", "free_port"]
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
#: the JVM and server options of a lean server (module docstring)
LEAN_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dzookeeper.digest.enabled=false",
                    "-Dzookeeper.nio.numWorkerThreads=0", "-Dzookeeper.nio.numSelectorThreads=1")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


#: a JVM starting beside four test workers and Spark on two loaded cores can take well over 30 s
#: (CI: `sim --embedded-zookeeper` exited 1 once at load ~7); only a server that never answers waits this long
START_TIMEOUT_S = 90.0

#: starts on a fresh free port when the one picked was taken before the JVM bound it
PORT_ATTEMPTS = 3

#: the guard's script ($1: the server's process group, $2: its own data dir or ""): the pipe on its
#: stdin reaches EOF when every holder of its write end is gone — the starter's stop() kills the guard
#: first, so EOF means the starter ended without it; then TERM the server, KILL it if it is still
#: there 10 s later, and remove the data dir. /bin/sh is dash on Debian: its ``kill`` takes a negative
#: pid as a process group but not ``--`` (``kill -TERM -- -1234`` fails with "Illegal number")
GUARD_SCRIPT = """read -r _
if kill -TERM "-$1" 2>/dev/null; then
  i=0
  while kill -0 "-$1" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "-$1" 2>/dev/null
fi
[ -z "$2" ] || rm -rf -- "$2"
"""


class EmbeddedZooKeeperError(RuntimeError):
    """The private ZooKeeper could not be started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedZooKeeper:
    """One standalone ZooKeeper on 127.0.0.1; use as a context manager or start()/stop()."""

    def __init__(self, port: int | None = None, data_dir: str | None = None,
                 max_buffer: int = 0xFFFFF, start_timeout: float = START_TIMEOUT_S,
                 sasl_users: Mapping[str, str] | None = None, require_sasl: bool = True,
                 heap: str = "512m", lean: bool = False) -> None:
        if not re.fullmatch(r"[1-9][0-9]*[mMgG]", heap):
            raise EmbeddedZooKeeperError(f"heap {heap!r}: give the JVM's -Xmx size, e.g. 512m or 4g")
        self.heap = heap
        self.lean = lean
        self.host = "127.0.0.1"
        self.require_sasl = require_sasl
        self._fixed_port = port is not None
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-runbooks-zk-"))
        self.max_buffer = max_buffer
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        for user in sasl_users or {}:
            if not user.replace("-", "").replace("_", "").isalnum():
                raise EmbeddedZooKeeperError(f"SASL user {user!r}: use letters, digits, '-' and '_'")
        self._sasl_users = dict(sasl_users or {})

    @property
    def secured(self) -> bool:
        return bool(self._sasl_users)

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    def _write_config(self) -> Path:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("\n".join([
            "tickTime=500",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,mntr,stat,conf",
            "maxClientCnxns=0",
            "globalOutstandingLimit=100000",
            "snapCount=1000000",
            "autopurge.purgeInterval=0",
            "forceSync=no",
            *(["authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"]
              if self.secured else []),
            *(["sessionRequireClientSASLAuth=true"] if self.secured and self.require_sasl else []),
            "",
        ]))
        (self.data_dir / "log4j.properties").write_text("log4j.rootLogger=WARN, stdout\n")
        return cfg

    def _write_jaas(self) -> Path:
        """The server's JAAS file: one DIGEST-MD5 user per ``user_<name>`` option."""
        def quote(text: str) -> str:
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        users = "\n".join(f"  user_{u}={quote(p)}" for u, p in sorted(self._sasl_users.items()))
        jaas = self.data_dir / "jaas.conf"
        fd = os.open(jaas, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                    f"{users};\n}};\n")
        return jaas

    def start(self) -> "EmbeddedZooKeeper":
        java = shutil.which("java")
        if java is None:
            raise EmbeddedZooKeeperError("java not found: install a JRE (apt-get install default-jre-headless)")
        if not ZOOKEEPER_JAR.exists():
            raise EmbeddedZooKeeperError(
                f"{ZOOKEEPER_JAR} not found: install Debian's ZooKeeper (apt-get install zookeeper)")
        deadline = time.monotonic() + self.start_timeout
        for attempt in range(1 if self._fixed_port else PORT_ATTEMPTS):
            if attempt:
                self.port = free_port()
            self._launch(java)
            if self._wait_until_serving(deadline):
                return self
            self._end_processes()       # the port was another server's: again on a new one
        self.stop()
        hint = "choose another port or leave it out" if self._fixed_port else "too many servers starting at once"
        raise EmbeddedZooKeeperError(f"ZooKeeper could not get a port of its own (last {self.connect_string}): {hint}")

    def _launch(self, java: str) -> None:
        cfg = self._write_config()
        log = open(self.data_dir / "server.log", "wb")
        security = [f"-Djava.security.auth.login.config={self._write_jaas()}"] if self.secured else []
        lean = LEAN_JVM_OPTIONS if self.lean else ()
        cmd = [java, f"-Xmx{self.heap}", *lean, f"-Djute.maxbuffer={self.max_buffer}",
               "-Dzookeeper.jmx.log4j.disable=true", *security, "-cp", str(ZOOKEEPER_JAR), MAIN_CLASS,
               str(cfg)]
        self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self._guard = subprocess.Popen(["/bin/sh", "-c", GUARD_SCRIPT, "zookeeper-guard", str(self.process.pid),
                                        str(self.data_dir) if self._own_dir else ""],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)

    def _wait_until_serving(self, deadline: float) -> bool:
        """True once this JVM serves sessions on the port; False if another server holds the port
        (found answering there, or this JVM exited on "Address already in use").

        ``ruok`` is not enough: it answers ``imok`` as soon as the port is bound, while the server
        still refuses sessions ("not currently serving requests", 0.7 s on a loaded CI machine, more
        under heavier load), and a client's reconnection backoff can then outlast its own timeout;
        and a ``free_port()`` taken by another starting server before this JVM binds it answers too.
        So: ``srvr`` must show a serving server, and ``conf`` this server's own data dir."""
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "Address already in use" in self._log_tail():
                    return self._port_taken()
                error = EmbeddedZooKeeperError(f"ZooKeeper exited with {self.process.returncode}: "
                                               + self._log_tail())
                self.stop()
                raise error
            try:
                if "Mode: standalone" in four_letter_word(self.host, self.port, b"srvr", 0.5):
                    if f"dataDir={self.data_dir / 'data'}/" in four_letter_word(self.host, self.port, b"conf", 0.5):
                        return True
                    return self._port_taken()
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise EmbeddedZooKeeperError(
            f"ZooKeeper did not serve on {self.connect_string} within {self.start_timeout}s: " + self._log_tail())

    def _port_taken(self) -> bool:
        """False (try another port) for a port picked here; a port the caller gave: the error."""
        if not self._fixed_port:
            return False
        port = self.port
        self.stop()
        raise EmbeddedZooKeeperError(f"another server holds 127.0.0.1:{port}: choose another port or leave it out")

    def describe(self) -> str:
        """The server's state for an error message: running or exited, and its last log lines."""
        proc = self.process
        if proc is None:
            state = "stopped"
        elif proc.poll() is None:
            state = f"running as pid {proc.pid}"
        else:
            state = f"exited with {proc.returncode}"
        return f"private ZooKeeper on {self.connect_string} {state}; its log ends: {self._log_tail()[-600:]}"

    def _log_tail(self) -> str:
        try:
            return (self.data_dir / "server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        self._end_processes()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _end_processes(self) -> None:
        """The guard, then the server (TERM, KILL 10 s later); the data dir stays."""
        guard, self._guard = self._guard, None
        if guard is not None:           # first, so it never signals a process group that is gone
            guard.kill()
            guard.wait()
            guard.stdin.close()
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def __enter__(self) -> "EmbeddedZooKeeper":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
