"""The audit log: one JSON line per ZooKeeper write (or planned write, in a dry run).

Every record names the path, the operation (create/set/delete), the payload before and after
(decoded JSON where the payload is JSON, text otherwise, ``null`` for no data), who wrote it
(actor), the run id and task, and whether it was a dry run. :class:`kafka_zk.writer.ZkWriter`
appends one record *before* each write, so a crash mid-write still leaves the intent on disk.

Failure: an unwritable log path raises :class:`OSError` at the first append (the writer then
refuses to write to ZooKeeper at all); :meth:`AuditLog.read` raises :class:`InvalidPayload`
naming the line that is not a record.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kafka_zk.errors import InvalidPayload

#: ZooKeeper writes, plus the approval decisions that gate them (who approved which plan hash).
OPS = ("create", "set", "delete", "approve", "reject")


def decode_for_audit(data: bytes | str | None) -> Any:
    """A payload as it appears in the log: parsed JSON, else UTF-8 text, else ``None``."""
    if data is None:
        return None
    if isinstance(data, bytes):
        if data == b"":
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data.hex()
    else:
        text = data
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class AuditRecord:
    """One write: ``before``/``after`` are decoded payloads (see :func:`decode_for_audit`)."""

    path: str
    op: str
    before: Any = None
    after: Any = None
    actor: str = ""
    run_id: str = ""
    task: str = ""
    dry_run: bool = False
    time: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Appends :class:`AuditRecord` lines to ``path`` (``None``: keep them in memory only).

    ``records`` always holds what this instance appended, so callers without a file (tests,
    the CLI without ``--audit-log``) can still show them.
    """

    def __init__(self, path: str | Path | None, run_id: str = "", task: str = "") -> None:
        self.path = Path(path) if path is not None else None
        self.run_id = run_id
        self.task = task
        self.records: list[AuditRecord] = []
        self._lock = threading.Lock()

    def append(self, record: AuditRecord) -> AuditRecord:
        """Fill time/run id/task when empty, write the line (flushed and fsynced), keep it."""
        fields = asdict(record)
        fields["time"] = fields["time"] or utc_now_iso()
        fields["run_id"] = fields["run_id"] or self.run_id
        fields["task"] = fields["task"] or self.task
        if fields["op"] not in OPS:
            raise ValueError(f"audit op {fields['op']!r} is not one of {OPS}")
        full = AuditRecord(**fields)
        with self._lock:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(full.to_json() + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            self.records.append(full)
        return full

    @staticmethod
    def read(path: str | Path) -> list[AuditRecord]:
        """Every record of an audit file, in order."""
        out = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    out.append(AuditRecord(**json.loads(line)))
                except (ValueError, TypeError) as exc:
                    raise InvalidPayload(f"{path}:{n}: not an audit record ({exc})") from None
        return out
