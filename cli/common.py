"""What the ZooKeeper commands of ``kafka-runbook`` share: the connection flags, a connected
write gate (dry-run and audit log from the flags), dry-run printing, ``--config k=v`` parsing,
and the input checks every command makes before its first write: input files read as UTF-8
text (a missing, unreadable, binary or directory path is one clear error), record files whose
folder exists and is writable, bounded timeouts, and :func:`planner`, a dry-run twin of the
write gate with which a command rehearses all its writes (every payload checked, sizes too)
before making the first one.

Secured clusters: ``--zk-jaas FILE`` names a JAAS file (as Kafka's tools take it in
``-Djava.security.auth.login.config``) whose ``Client`` section (``--zk-jaas-section``) holds the
SASL login; ``--zk-set-acl`` (Kafka's ``zookeeper.set.acl=true``) makes what we create carry
Kafka's ACLs. Passwords are never taken on the command line (``ps`` would show them).

Failure: an unreachable ensemble or a missing chroot raises from :func:`kafka_zk.connect.connect`
(one ``Error:`` line through cli.main); the client is always closed.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from pathlib import Path
from typing import Iterator

from kafka_zk.audit import AuditLog
from kafka_zk.connect import close, connect
from kafka_zk.errors import InvalidConfig, InvalidInput
from kafka_zk.zk_auth import NO_AUTH, ZkCredentials, parse_jaas_section
from kafka_zk.authority import PersonAtKeyboard
from kafka_zk.writer import ZkWriter


MAX_SECONDS = 24 * 3600.0


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds in (0, 24 h] (``nan``, ``inf``, 0 refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, e.g. 10") from None
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0 and at most {MAX_SECONDS:g}")
    return value


def read_text_file(path: str | None, flag: str) -> str:
    """The UTF-8 text of an input file named by ``flag``; any failure is one :class:`InvalidInput`."""
    if not path:
        raise InvalidInput(f"{flag} is required for this action")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{flag} {path}: not UTF-8 text (byte {exc.start}); give the JSON file Kafka's "
                           "tools write") from None
    except OSError as exc:
        raise InvalidInput(f"{flag} {path}: {exc.strerror or exc}; check the path") from None


def check_output_file(path: str, flag: str) -> None:
    """A file this command will write: its folder exists and is writable, and it is no folder."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InvalidInput(f"{flag} {path} is a folder; give a file path, e.g. {os.path.join(path, 'record.json')}")
    if not os.path.isdir(folder):
        raise InvalidInput(f"{flag} {path}: the folder {folder} does not exist; create it first (nothing written)")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InvalidInput(f"{flag} {path}: not writable by this user; pick a writable path (nothing written)")


def planner(writer: ZkWriter) -> ZkWriter:
    """A dry-run twin of ``writer`` (same client and limits, no audit): run a command's writes
    through it first, so every check and payload is passed before the first real write."""
    return writer.dry_twin()


def add_zk_arguments(p: argparse.ArgumentParser, writes: bool = True) -> None:
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/CHROOT]",
                   help="ZooKeeper connect string of the cluster (Kafka's zookeeper.connect)")
    p.add_argument("--zk-timeout", type=seconds, default=10.0, metavar="SECONDS",
                   help="give up connecting after this many seconds (default 10)")
    add_zk_auth_arguments(p)
    if writes:
        p.add_argument("--dry-run", action="store_true", help="print the ZooKeeper writes, make none")
        p.add_argument("--audit-log", metavar="FILE", help="append one JSON line per write to FILE")
        p.add_argument("--run-id", default="", help="run id recorded in the audit log")


def add_zk_auth_arguments(p: argparse.ArgumentParser) -> None:
    """``--zk-jaas``, ``--zk-jaas-section``, ``--zk-sasl-service``, ``--zk-set-acl``."""
    p.add_argument("--zk-jaas", metavar="FILE",
                   help="JAAS file with the SASL login to ZooKeeper (what Kafka reads from "
                        "-Djava.security.auth.login.config)")
    p.add_argument("--zk-jaas-section", default="Client", metavar="NAME",
                   help="section of --zk-jaas to use (default Client, Kafka's zookeeper.sasl.clientconfig)")
    p.add_argument("--zk-sasl-service", default="zookeeper", metavar="NAME",
                   help="SASL service name of the ensemble (default zookeeper)")
    p.add_argument("--zk-set-acl", action="store_true",
                   help="the cluster runs with zookeeper.set.acl=true: create znodes with Kafka's ACLs")


def credentials_from_args(args: argparse.Namespace) -> ZkCredentials:
    """The session's credentials from ``--zk-jaas``/``--zk-set-acl`` (none when not given)."""
    jaas = getattr(args, "zk_jaas", None)
    set_acl = bool(getattr(args, "zk_set_acl", False))
    if not jaas:
        if set_acl:
            raise InvalidInput("--zk-set-acl needs --zk-jaas: Kafka creates its znodes as the "
                               "authenticated principal")
        return NO_AUTH
    try:
        text = Path(jaas).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"--zk-jaas {jaas}: cannot read it ({exc.strerror}); give the path of "
                           "the JAAS file") from None
    try:
        return parse_jaas_section(text, args.zk_jaas_section, args.zk_sasl_service, set_acl)
    except InvalidInput as exc:
        raise InvalidInput(f"--zk-jaas {jaas}: {exc}") from None


@contextlib.contextmanager
def open_cluster(args: argparse.Namespace, task: str) -> Iterator[ZkWriter]:
    """A connected :class:`ZkWriter` (dry-run and audit log from ``args``); closes the client."""
    client = connect(args.zookeeper, timeout=args.zk_timeout, session_timeout=max(args.zk_timeout, 4.0),
                     credentials=credentials_from_args(args))
    try:
        audit = AuditLog(getattr(args, "audit_log", None), run_id=getattr(args, "run_id", ""), task=task)
        # the command line has no approval step: the person who typed the command approves its writes
        yield ZkWriter(client, audit, dry_run=getattr(args, "dry_run", False),
                       authority=PersonAtKeyboard(f"the person running kafka-runbook {task}"))
    finally:
        close(client)


def print_planned(writer: ZkWriter) -> None:
    """In a dry run, one line per planned write."""
    if not writer.dry_run:
        return
    if not writer.planned:
        print("DRY RUN: nothing would be written.")
    for w in writer.planned:
        data = "" if w.data is None else " " + w.data.decode("utf-8", "replace")
        print(f"DRY RUN: would {w.op} {w.path}{data}")


def parse_config_options(items: list[str] | None) -> dict[str, str]:
    """Repeated ``--config k=v`` options."""
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise InvalidConfig(f"--config {item!r} is not key=value; write e.g. --config retention.ms=86400000")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out
