"""The audit log: JSON lines, decoded payloads, read back, in-memory without a file."""

import json

import pytest

from kafka_zk.audit import AuditLog, AuditRecord, decode_for_audit
from kafka_zk.errors import InvalidPayload


def test_append_and_read(tmp_path):
    path = tmp_path / "run" / "audit.jsonl"
    log = AuditLog(path, run_id="run-7", task="set_throttles")
    log.append(AuditRecord("/controller_epoch", "set", before=decode_for_audit(b"3"),
                           after=decode_for_audit(b"4"), actor="me"))
    log.append(AuditRecord("/x", "create", after=decode_for_audit(b"plain text"), dry_run=True))
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    assert set(first) == {"time", "path", "op", "before", "after", "actor", "run_id", "task", "dry_run"}
    assert first["before"] == 3 and first["run_id"] == "run-7" and first["task"] == "set_throttles"
    recs = AuditLog.read(path)
    assert recs == log.records and recs[1].after == "plain text" and recs[1].dry_run
    assert decode_for_audit(None) is None and decode_for_audit(b"") is None


def test_memory_only_and_bad_input(tmp_path):
    log = AuditLog(None)
    log.append(AuditRecord("/a", "delete"))
    assert len(log.records) == 1
    with pytest.raises(ValueError):
        log.append(AuditRecord("/a", "rename"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"path":"/a","op":"set"}\nnot json\n')
    with pytest.raises(InvalidPayload, match="bad.jsonl:2"):
        AuditLog.read(bad)
