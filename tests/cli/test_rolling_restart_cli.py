"""``kafka-runbook restart`` end to end on the emulator (real ZooKeeper, the command as a user runs it).

Six brokers in three racks with data and a producer-like load are rolled rack by rack, one broker
at a time, each restarted by ``kafka-runbook sim fault restart`` (Kafka 2.4.1's timing): no
partition offline in any sample, every preferred leadership back at the end, the replica orders
unchanged, a line per broker step as it happens and the timeline printed. Piped, the output is
lines only; on a terminal (a pty) a progress bar is drawn under them. A stopped roll says how to
resume in a shell's words (the same command, with the progress file it names), and that resumes it.
Bad input is refused before anything is done.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest

from tests.conftest import new_chroot
from tests.rolling_restart_env import (RACKS, REPO, OfflineSampler, preferred_leaders, restart_action,
                                       start_roll_cluster)

CLI = [sys.executable, "-m", "cli.main"]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture
def roll_connect(zk_server) -> str:
    return zk_server.connect_string + new_chroot(zk_server)


def test_a_rolling_restart_from_the_shell_keeps_every_partition_online(roll_connect, zk_server, tmp_path):
    from kazoo.client import KazooClient
    with start_roll_cluster(roll_connect) as cluster:
        zk = KazooClient(hosts=roll_connect)
        zk.start()
        try:
            before = cluster_assignment(zk)
            controller = cluster.controller_id()
            progress = tmp_path / "progress.json"
            with OfflineSampler(roll_connect) as sampler:
                done = _cli("restart", "--zookeeper", roll_connect, "--action", restart_action(roll_connect),
                            "--progress", str(progress), "--poll", "0.1")
            assert done.returncode == 0, done.stderr + done.stdout
            assert sampler.samples > 20 and sampler.offline == set()
            assert cluster_assignment(zk) == before                      # replica orders restored
            assert all(pref == leader for pref, leader in preferred_leaders(zk).values())
            book = json.loads(progress.read_text())
            order = [int(b) for batch in book["batches"] for b in batch["brokers"]]
            racks = [RACKS[b] for b in order]
            assert sorted(order) == [1, 2, 3, 4, 5, 6] and all(len(batch["brokers"]) == 1 for batch in book["batches"])
            assert [racks[i] for i in range(0, 6, 2)] == [racks[i] for i in range(1, 6, 2)]   # rack by rack
            assert order[-1] == controller                                                 # the controller last
            assert all(b["state"] == "done" and b["registered_at"] > b["submitted_at"] for b in book["batches"])
            assert "every broker restarted" in done.stdout and "| leaders back |" in done.stdout
            for broker in order:
                assert broker_steps(done.stdout, broker) == STEPS, done.stdout
            assert step_brokers(done.stdout) == order                 # each line as it happened, broker by broker
            assert "\r" not in done.stdout and "\x1b" not in done.stdout   # piped: no bar
            assert "roll task" not in done.stdout + done.stderr
            again = _cli("restart", "--zookeeper", roll_connect, "--action", restart_action(roll_connect),
                         "--progress", str(progress))
            assert again.returncode == 0 and "every broker restarted" in again.stdout
        finally:
            zk.stop()
            zk.close()


#: the step lines of one broker, in order (docs/cli.md)
STEPS = ["stop gate passed", "leadership moved", "restart command run", "stopped (from ZooKeeper: registration gone)",
         "registered again", "in sync", "leaders back"]
LINE = re.compile(r"^\d\d:\d\d:\d\d \[(\d+)/(\d+)\] broker (\d+): (.*)$", re.M)


def broker_steps(stdout: str, broker: int) -> list[str]:
    """The steps printed for ``broker``, each named by the start of its line's text."""
    return [next((s for s in STEPS if text.startswith(s)), text)
            for _, _, b, text in LINE.findall(stdout) if int(b) == broker]


def step_brokers(stdout: str) -> list[int]:
    """The brokers in the order their lines first appear."""
    seen: list[int] = []
    for _, _, b, _ in LINE.findall(stdout):
        if int(b) not in seen:
            seen.append(int(b))
    return seen


def test_a_stopped_roll_names_how_to_resume_from_the_shell_and_that_resumes_it(roll_connect, tmp_path):
    with start_roll_cluster(roll_connect):
        failed = _cli("restart", "--zookeeper", roll_connect, "--action", "false {broker}", "--brokers", "1,2",
                      "--poll", "0.1")
        assert failed.returncode == 1, failed.stderr + failed.stdout
        said = re.search(r"To resume from this shell: run the same command again with --progress (\S+) to resume "
                         r"at broker 1$", failed.stderr.strip())
        assert said, failed.stderr
        assert "roll task" not in failed.stdout + failed.stderr and "Airflow" not in failed.stdout + failed.stderr
        assert broker_steps(failed.stdout, 1) == STEPS[:2] and broker_steps(failed.stdout, 2) == []
        progress = said.group(1)
        assert json.loads(open(progress).read())["batches"][0]["state"] == "failed"
        resumed = _cli("restart", "--zookeeper", roll_connect, "--action", restart_action(roll_connect),
                       "--brokers", "1,2", "--poll", "0.1", "--progress", progress)
        assert resumed.returncode == 0, resumed.stderr + resumed.stdout
        assert broker_steps(resumed.stdout, 1) == STEPS[2:]          # gate and demotion were done: not again
        assert broker_steps(resumed.stdout, 2) == STEPS
        os.unlink(progress)


def test_on_a_terminal_a_progress_bar_is_drawn_under_the_lines(roll_connect):
    with start_roll_cluster(roll_connect):
        main, child = pty.openpty()
        proc = subprocess.Popen([*CLI, "restart", "--zookeeper", roll_connect, "--action",
                                 restart_action(roll_connect), "--brokers", "3", "--poll", "0.1"],
                                stdout=child, stderr=subprocess.PIPE, cwd=REPO)
        os.close(child)
        out = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:                  # the child closed its end
                break
            if not chunk:
                break
            out += chunk
        os.close(main)
        assert proc.wait(300) == 0, proc.stderr.read()
        text = out.decode()
        assert "\r\x1b[K[" in text and "0/1 brokers restarted" in text and "1/1 brokers restarted" in text
        lines = text.replace("\r\n", "\n")
        assert broker_steps(re.sub(r"\r\x1b\[K(\[[#-]+\][^\r\n]*)?", "", lines), 3) == STEPS
        assert "# Rolling restart" in text and "every broker restarted" in text


def cluster_assignment(zk) -> dict[str, list[int]]:
    out = {}
    for t in ("orders", "events"):
        doc = json.loads(zk.get(f"/brokers/topics/{t}")[0])
        out.update({f"{t}-{p}": r for p, r in doc["partitions"].items()})
    return out


@pytest.mark.parametrize("args, words", [
    (["--brokers", "9"], "brokers [9] are not registered"),
    (["--brokers", "1,1"], "duplicate"),
    (["--racks", "z"], "racks ['z']"),
])
def test_bad_input_is_refused_before_anything_is_done(roll_connect, args, words):
    with start_roll_cluster(roll_connect):
        done = _cli("restart", "--zookeeper", roll_connect, "--action", "true {broker}", *args, timeout=60)
        assert done.returncode == 1 and words in done.stderr, done.stderr
        no_broker = _cli("restart", "--zookeeper", roll_connect, "--action", "systemctl restart kafka", timeout=60)
        assert no_broker.returncode == 1 and "names no broker" in no_broker.stderr


def test_the_restart_command_runs_the_roll_without_importing_airflow():
    """The roll engine and the console are Airflow-free: a fresh process loading the command has no airflow module."""
    probe = ("import sys, cli.main, cli.restart, cli.restart_progress, procedures.restart.roll; "
             "print(sorted(m for m in sys.modules if m == 'airflow' or m.startswith('airflow.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr + done.stdout


def test_the_bar_fits_the_terminal_and_the_lines_read_the_same_with_or_without_it():
    import io

    from cli.restart_progress import RollPrinter, bar_text
    from procedures.restart.roll import RollEvent

    bar = bar_text(7, 14, 1, 2, "broker 2: waiting for every ISR", 12.4, width=40)
    assert len(bar) == 39 and bar.startswith("[############------------] 1/2 brokers")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True
    events = [RollEvent(0, (1,), "gate_passed", 0.0), RollEvent(0, (1,), "demoted", 1.0, "1 leadership(s) moved off"),
              RollEvent(0, (1,), "registered", 8.5)]
    outputs = []
    for stream in (io.StringIO(), Terminal()):
        with RollPrinter(stream, [(1,), (2,)], clock=lambda: 0.0) as printer:
            for e in events:
                printer(e)
        outputs.append(stream.getvalue())
    piped, terminal = outputs
    assert piped.splitlines() == ["00:00:00 [1/2] broker 1: stop gate passed",
                                  "00:00:01 [1/2] broker 1: leadership moved (1 leadership(s) moved off)",
                                  "00:00:08 [1/2] broker 1: registered again (new session), +7.5 s after the restart "
                                  "command started"]
    assert "\r" not in piped and "\x1b" not in piped
    assert "brokers restarted" in terminal and terminal.endswith("\r\x1b[K")      # the bar is taken away at the end
    assert re.sub(r"\r\x1b\[K(\[[#-]+\][^\r\n]*)?", "", terminal) == piped
