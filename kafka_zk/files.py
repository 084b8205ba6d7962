"""Local files written atomically and durably, read back as JSON: the one copy every layer uses.

A write goes to a temporary file in the same directory, is fsynced, then ``os.replace``d over the
target, so a task killed mid-write leaves the old file or the new one, never half or an empty one;
parents are created. Reading a file that is not JSON raises :class:`InvalidPayload` naming the
file and the fix; a missing file is ``None``. No ZooKeeper, no Airflow: the run folder
(:mod:`procedures.run_folder`) and the retiring-brokers file (:mod:`kafka_zk.retiring`) build on it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kafka_zk.errors import InvalidPayload


def write_json_atomic(path: str | Path, value: Any) -> Path:
    """Write ``value`` as indented JSON to ``path`` atomically and durably; parents are created."""
    return write_text_atomic(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and durably (fsynced before the rename, so a crash leaves
    the old file or the new one, never an empty one); parents are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_json(path: str | Path) -> Any:
    """The JSON in ``path``, or ``None`` when the file does not exist."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidPayload(f"{path}: not valid JSON ({exc}); delete or restore the file") from None
