"""``kafka-runbook restart``: a rolling restart without Airflow — the rolling_restart runbook's roll, from a shell.

``kafka-runbook restart --zookeeper HOST:PORT/CHROOT --action 'ssh {host} sudo systemctl restart kafka'``
restarts every live broker (or ``--brokers 1,2,3``, or ``--racks a,b``), rack by rack, one broker
at a time (``--by rack``: one rack at a time), the controller last. Per broker: the stop gate
(nothing offline, under-replicated or at min ISR on it), leadership moved off it, the action run
(``{broker}``, ``{host}`` and ``{rack}`` replaced; run by ``/bin/bash -c``), then waits until it
registered again, is back in every ISR and leads its preferred partitions again
(docs/runbooks/rolling_restart.md). A line is printed per broker step as it happens
(:mod:`cli.restart_progress`; on a terminal, with a progress bar under it), then the report.
``--progress FILE`` keeps where the roll stands: the same command with the same file resumes at the
next broker not restarted; without it the progress goes to a temporary file that a stopped roll
names (``--progress …`` to resume), removed when the roll ends. The person typing the
command approves its writes (as every write command of this tool); ``--dry-run`` prints the order,
the stop gate's verdict, the commands and the planned writes, and runs no action.

Failure: bad input (unknown broker, an action without ``{broker}``/``{host}``): one ``Error:`` line,
exit 1, nothing done. A gate not passed in its timeout or a failed action stops the roll before
the next broker: the report is printed, then one ``Error:`` line naming the broker, the cause and
how to resume (the same command again, with the progress file), exit 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile

from cli.common import add_zk_arguments, open_cluster, print_planned, seconds
from kafka_zk.errors import KafkaZkError
from cli.restart_progress import RollPrinter
from kafka_zk.snapshot import read_snapshot
from procedures.batches.book import BatchBook, BatchState
from procedures.restart.plan import RestartPlan, plan_roll
from procedures.restart.report import report_md
from procedures.restart.roll import Roll, RestartBatch, RestartBook, RollSettings, RollStopped, load_progress, roll_all

log = logging.getLogger("kafka-runbook.restart")


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("restart", help="rolling restart, broker by broker, gated on ISR health",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    p.add_argument("--action", required=True, metavar="TEMPLATE",
                   help="command restarting one broker; {broker}, {host}, {rack} are replaced")
    p.add_argument("--brokers", default="all", help="broker ids (e.g. 1,2,3) or 'all' (default)")
    p.add_argument("--racks", default="", help="only the brokers of these racks (e.g. a,b)")
    p.add_argument("--by", choices=("broker", "rack"), default="broker",
                   help="one broker at a time (default) or one rack at a time")
    p.add_argument("--progress", metavar="FILE", default=None,
                   help="progress file: the same command with the same file resumes the roll")
    p.add_argument("--stop-gate-timeout", type=seconds, default=300.0, metavar="SECONDS")
    p.add_argument("--register-timeout", type=seconds, default=600.0, metavar="SECONDS")
    p.add_argument("--in-sync-timeout", type=seconds, default=900.0, metavar="SECONDS")
    p.add_argument("--leaders-timeout", type=seconds, default=300.0, metavar="SECONDS")
    p.add_argument("--action-timeout", type=seconds, default=900.0, metavar="SECONDS")
    p.add_argument("--poll", type=seconds, default=1.0, metavar="SECONDS")
    p.set_defaults(func=run)


def shell_action(plan: RestartPlan, timeout: float):
    """The action: the plan's template for one broker, run by bash; its last output line, or raise."""
    def act(broker: int) -> str:
        cmd = plan.command(broker)
        try:
            done = subprocess.run(["/bin/bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`{cmd}` did not finish within {timeout:g}s") from None
        last = (done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [""])[-1]
        if done.returncode != 0:
            err = (done.stderr.strip().splitlines() or [last])[-1]
            raise RuntimeError(f"`{cmd}` exited {done.returncode}: {err}")
        return last
    return act, plan.command


def resume_text(args: argparse.Namespace, progress: str, book: RestartBook) -> str:
    """How a stopped roll is resumed from this shell (the engine says "resume the roll"): the same command,
    with the progress file it must be given, and the broker(s) it goes on at."""
    at = next((b for b in book.batches if b.state is not BatchState.DONE), None)
    where = "" if at is None else f" to resume at broker{'s' if len(at.items) > 1 else ''} {', '.join(at.items)}"
    return "run the same command again" + ("" if args.progress else f" with --progress {progress}") + where


def scratch_progress() -> str:
    """A new temporary progress file (the roll's state when no ``--progress`` is given)."""
    fd, path = tempfile.mkstemp(prefix="kafka-runbook-restart-", suffix=".json")
    os.close(fd)
    os.unlink(path)                 # load_progress/ save create it; an empty file is no progress file
    return path


def run(args: argparse.Namespace) -> int:
    racks = [r.strip() for r in args.racks.split(",") if r.strip()]
    settings = RollSettings(args.stop_gate_timeout, args.register_timeout, args.in_sync_timeout,
                            args.leaders_timeout, poll_s=args.poll)
    progress = args.progress or scratch_progress()
    with open_cluster(args, "restart") as w:
        plan = plan_roll(read_snapshot(w.client, with_configs=False), args.brokers, racks, args.by, args.action)
        print(plan.text(), flush=True)
        book = (load_progress(args.progress, plan.batches) if args.progress
                else BatchBook.fresh(RestartBatch, [[str(b) for b in batch] for batch in plan.batches]))
        act, command = shell_action(plan, args.action_timeout)
        state = {"book": book}

        def save(b) -> None:
            state["book"] = b
            if not w.dry_run:
                b.save(progress)
        if w.dry_run:
            for batch in plan.batches:
                for broker in batch:
                    print(f"DRY RUN: would restart broker {broker} with: {command(broker)}")
        printer = RollPrinter(sys.stdout, plan.batches, [b.index for b in book.batches if b.state is BatchState.DONE])
        roll = Roll(w.client, w, act, settings, save, log, describe=command, observe=printer)
        try:
            with printer:
                roll_all(roll, book)
        except RollStopped as exc:           # the engine's words, plus how to resume from this shell
            print(report_md(plan, state["book"]), flush=True)
            raise type(exc)(f"{exc}. To resume from this shell: {resume_text(args, progress, state['book'])}") from exc
        except (KafkaZkError, KeyboardInterrupt):
            print(report_md(plan, state["book"]), flush=True)
            if not w.dry_run and os.path.exists(progress):
                print(f"The roll's progress is in {progress}: {resume_text(args, progress, state['book'])}.",
                      file=sys.stderr, flush=True)
            raise
        print(report_md(plan, state["book"]), flush=True)
        print_planned(w)
    if not args.progress and os.path.exists(progress):
        os.unlink(progress)           # the roll ended: nothing to resume
    sys.stdout.flush()
    return 0
