"""What the declarative-spec runbooks share (topic_changes, broker_configs): the spec's source, its
YAML, the stale-diff check at apply time, the bounded read-back.

* :func:`spec_text` — exactly one of the ``spec`` (YAML text) and ``spec_file`` (a path) Params;
* :func:`spec_entries` — the entries under a spec's one top-level key, each a YAML node, and the
  :class:`~procedures.reports.yaml_lines.LineReader` that names their lines (size-capped; a syntax
  error names its line; an empty spec or an empty list of entries refused);
* :class:`SpecDiff` — a diff document's JSON (its fields and ``writes_nothing``);
* :func:`still_to_write` — the diff recomputed on the live cluster at apply time must be the one
  approved, less the changes an earlier try of the same apply already wrote (:class:`Resume`), else
  :class:`~kafka_zk.errors.StalePlan` (nothing written);
* :func:`wait_until_seen` — poll a read-back until it finds nothing missing, bounded.

Failure: :class:`~kafka_zk.errors.InvalidInput` (or the caller's subclass) naming the problem and
the fix; :class:`~kafka_zk.errors.StalePlan`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from kafka_zk.errors import InvalidInput, StalePlan
from procedures.reports.yaml_lines import LineReader

MAX_SPEC_BYTES = 1 << 20


def spec_text(spec: Any, spec_file: Any) -> tuple[str, str]:
    """(text, where it came from): exactly one of the ``spec`` and ``spec_file`` Params."""
    has_text = isinstance(spec, str) and spec.strip() != ""
    has_file = isinstance(spec_file, str) and spec_file.strip() not in ("", "None")
    if has_text == has_file:
        raise InvalidInput("give exactly one of spec (the YAML text) and spec_file (a path to it)")
    if has_text:
        return spec, "spec"
    try:
        return Path(spec_file).read_text(encoding="utf-8"), spec_file
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"spec_file={spec_file}: cannot read it ({e}); fix the path") from None


def spec_entries(text: str, path: str, error: type[InvalidInput], key: str, what: str,
                 name_one: str) -> tuple[LineReader, dict[str, yaml.Node]]:
    """(reader, {name: node}) of the entries under ``key``, the spec's one top-level key (see module
    docstring); ``what`` the entries are called, ``name_one`` the fix for an empty list."""
    root = _compose(text, path, error, f"declare {what} under '{key}:'")
    reader = LineReader(path, error)
    top = reader.mapping(root, "the spec", {key}, required={key})
    entries = reader.mapping(top[key], key, None)
    if not entries:
        raise reader.error(top[key], f"'{key}' is empty", name_one)
    return reader, entries


def _compose(text: str, path: str, error: type[InvalidInput], declare: str) -> yaml.Node:
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        raise error(f"{path}: larger than {MAX_SPEC_BYTES} bytes; split it")
    try:
        root = yaml.compose(text)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else "?"
        raise error(f"{path}, line {line}: not valid YAML ({e.problem}); fix the syntax there") from None
    except yaml.YAMLError as e:
        raise error(f"{path}: not valid YAML ({e}); fix the syntax") from None
    if root is None:
        raise error(f"{path}, line 1: the spec is empty; {declare}")
    return root


class SpecDiff(ABC):
    """A dataclass diff whose JSON (``to_json``, what the approval pins) is its fields, then ``writes_nothing``."""

    @property
    @abstractmethod
    def writes_nothing(self) -> bool:
        """True when applying the diff writes nothing."""

    def to_json(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "writes_nothing": self.writes_nothing}


@dataclass(frozen=True)
class Resume:
    """Where an apply stands against the approved diff: ``todo`` (the approved diff holding only the
    changes still to write) and ``found`` (per change list, the approved changes the cluster shows
    done already: an earlier try of this apply wrote them before it was stopped)."""

    todo: dict
    found: dict[str, list]


def still_to_write(now: dict, approved: dict, change_keys: Sequence[str]) -> Resume:
    """What of the ``approved`` diff is left to write, given the diff recomputed on the live cluster
    (``now``); else :class:`StalePlan`, nothing written.

    Each change list (``change_keys``) of ``now`` must hold only approved entries, unchanged (their
    ``before`` values included: nobody else touched them); an approved entry missing from ``now`` is
    already as the spec says — an earlier try of the same apply (killed by Airflow mid-way, seen
    under load) wrote it — and is not written again. With nothing found done, ``now`` must equal
    ``approved`` in full, as before any write."""
    foreign = [e for k in change_keys for e in now.get(k, []) if e not in approved.get(k, [])]
    found = {k: [e for e in approved.get(k, []) if e not in now.get(k, [])] for k in change_keys}
    if foreign or (not any(found.values()) and now != approved):
        raise StalePlan("the cluster changed since the diff was approved (the diff is now different); run "
                        "again for a fresh diff and approval")
    todo = {**approved, **{k: [e for e in approved.get(k, []) if e in now.get(k, [])] for k in change_keys}}
    return Resume(todo, found)


def wait_until_seen(missing: Callable[[], list[str]], timeout_s: float, poll_s: float = 0.5) -> list[str]:
    """Call ``missing`` until it returns nothing (``[]``) or ``timeout_s`` passed (what it still lacks)."""
    deadline = time.monotonic() + float(timeout_s)
    while True:
        lacking = missing()
        if not lacking or time.monotonic() >= deadline:
            return lacking
        time.sleep(poll_s)
