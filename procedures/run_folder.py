"""The run folder: where one runbook run keeps everything it produced, and nothing else.

A run folder is ``<run_root>/<dag_id>/<safe run id>/`` and holds, by fixed names:

=====================  ==========================================================
``snapshot.jsonl``     the cluster snapshot the plan was made from
``sizes.json``         the sizes file as the operator gave it (``kafka-log-dirs.sh --describe``)
``sizes.jsonl``        per-partition sizes, one per line (formats.sizes_file; what the plan reads)
``plan/``              the plan artifacts written by the Spark job (plan.json, ...)
``approval.json``      who approved which plan hash, and when (or the rejection)
``audit.jsonl``        one line per ZooKeeper write made or planned
``guards.json``        what the guards checked and what they refused
``throttles.json``     the throttle record: values present before the run
``waves.json``         wave progress: which waves are submitted / done, and when
``plan_report.*``      the plan report (Markdown and HTML)
``final_report.*``     the final report (Markdown and HTML)
``notification.txt``   the rendered notification
=====================  ==========================================================

Only paths and JSON I/O live here: no ZooKeeper, no Airflow. Writes are atomic (:mod:`kafka_zk.files`:
temporary file in the same directory, then ``os.replace``), so a task killed mid-write leaves either the old or
the new file, never half of one. Reading a file that is not JSON raises :class:`InvalidPayload`
naming the file; a missing file is ``None`` from :meth:`RunFolder.read_json`.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_zk.errors import InvalidInput
from kafka_zk.files import read_json, write_json_atomic, write_text_atomic

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


RUN_ROOT_ENV = "KAFKA_RUNBOOKS_RUN_ROOT"


def default_run_root() -> str:
    """The runbooks' default ``run_root``: ``$KAFKA_RUNBOOKS_RUN_ROOT``, else /var/tmp/kafka-runbooks/runs."""
    return os.environ.get(RUN_ROOT_ENV, "/var/tmp/kafka-runbooks/runs")


def safe_name(text: str) -> str:
    """A run id or dag id as one directory name: unsafe characters become ``_``.

    ``manual__2026-11-22T03:16:01.662427+00:00`` → ``manual__2026-11-22T03_16_01.662427_00_00``.
    """
    if not text or not text.strip():
        raise InvalidInput("run folder: empty dag id or run id; give the Airflow run id")
    name = _UNSAFE.sub("_", text.strip())
    if name in (".", ".."):
        raise InvalidInput(f"run folder: {text!r} is not a usable directory name")
    return name


@dataclass(frozen=True)
class RunFolder:
    """The folder of one DAG run; every property is a path inside it."""

    root: Path

    @classmethod
    def for_run(cls, run_root: str | Path, dag_id: str, run_id: str) -> "RunFolder":
        if not str(run_root).strip():
            raise InvalidInput("run_root is empty: give a directory for run folders, e.g. /var/lib/kafka-runbooks")
        return cls(Path(run_root) / safe_name(dag_id) / safe_name(run_id))

    def ensure(self) -> "RunFolder":
        """Create the folder; a run_root that cannot hold it is one :class:`InvalidInput` naming it."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".writable-{os.getpid()}-{threading.get_ident()}"
            probe.write_text("")
            probe.unlink(missing_ok=True)
        except OSError as exc:
            run_root = self.root.parent.parent
            raise InvalidInput(f"run_root={str(run_root)!r}: cannot create the run folder {self.root} "
                               f"({exc.strerror or exc}); set run_root to a folder the Airflow workers can "
                               "write, e.g. /var/lib/kafka-runbooks") from None
        return self

    @property
    def snapshot(self) -> Path:
        return self.root / "snapshot.jsonl"

    @property
    def plan_dir(self) -> Path:
        return self.root / "plan"

    @property
    def sizes(self) -> Path:
        return self.root / "sizes.json"

    @property
    def partition_sizes(self) -> Path:
        return self.root / "sizes.jsonl"

    @property
    def capacity(self) -> Path:
        """Broker disk capacity for the plan (:mod:`kafka_zk.capacity`, native form), if given."""
        return self.root / "capacity.json"

    @property
    def approval(self) -> Path:
        return self.root / "approval.json"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def guards(self) -> Path:
        return self.root / "guards.json"

    @property
    def throttle_record(self) -> Path:
        return self.root / "throttles.json"

    @property
    def wave_progress(self) -> Path:
        return self.root / "waves.json"

    @property
    def wave_failure(self) -> Path:
        """Why the wave wait failed (trigger status and message), for the final report."""
        return self.root / "wave_failure.json"

    @property
    def throttle_janitor(self) -> Path:
        """Throttles the teardown keeps while a wave of the run still copies (and when it removed them)."""
        return self.root / "throttle_janitor.json"

    @property
    def verify(self) -> Path:
        return self.root / "verify.json"

    @property
    def plan_report_md(self) -> Path:
        return self.root / "plan_report.md"

    @property
    def plan_report_html(self) -> Path:
        return self.root / "plan_report.html"

    @property
    def final_report_md(self) -> Path:
        return self.root / "final_report.md"

    @property
    def final_report_html(self) -> Path:
        return self.root / "final_report.html"

    @property
    def notification(self) -> Path:
        return self.root / "notification.txt"

    def read_json(self, path: Path) -> Any:
        return read_json(path)

    def write_json(self, path: Path, value: Any) -> Path:
        return write_json_atomic(path, value)

    def write_text(self, path: Path, text: str) -> Path:
        return write_text_atomic(path, text)
