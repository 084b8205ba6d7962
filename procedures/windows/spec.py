"""The maintenance-windows file: when each cluster may be changed, and which runs skip the human.

An administrator declares, per cluster connection id, the windows (a cron expression for the
start, a duration, a time zone), the runbooks each window admits, and an optional pre-approval
policy. The file is YAML (docs/maintenance-windows.md shows a full example)::

    clusters:
      kafka_zookeeper_default:
        windows:
          - name: tue-thu-night
            start: "0 1 * * 2,4"          # cron, in the window's time zone
            duration: 4h
            timezone: Europe/Berlin
            runbooks: [decommission_brokers, preferred_leader_election]
        pre_approval:
          runbooks: [preferred_leader_election]
          max_replicas_moved: 200
          max_bytes_moved: 50GiB
          require_rehearsal: true

Its path comes from the Airflow Variable ``kafka_runbooks_windows_file`` or, without it, the
environment variable ``KAFKA_RUNBOOKS_WINDOWS_FILE`` (:func:`windows_file_path`).

Failure: :class:`WindowsFileError` names the file, the line, what is wrong and the fix; a file
that does not parse is refused whole (no half-read policy ever applies).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from kafka_zk.errors import InputRefused, InvalidInput
from kafka_zk.validation import parse_size
from procedures.reports.yaml_lines import NAME, LineReader

VARIABLE = "kafka_runbooks_windows_file"
ENV_VAR = "KAFKA_RUNBOOKS_WINDOWS_FILE"
MAX_FILE_BYTES = 1 << 20
MAX_DURATION = timedelta(days=7)

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")

_CLUSTER_KEYS = {"windows", "pre_approval", "approval_expires_after", "approvers"}
DEFAULT_APPROVAL_EXPIRY = timedelta(hours=12)
MIN_APPROVAL_EXPIRY = timedelta(seconds=10)
_WINDOW_KEYS = {"name", "start", "duration", "timezone", "runbooks"}
_POLICY_KEYS = {"runbooks", "max_replicas_moved", "max_bytes_moved", "require_rehearsal"}


class WindowsFileError(InvalidInput):
    """The windows file is malformed; the message names the line and the fix."""


@dataclass(frozen=True)
class Window:
    """One recurring window: opens at each ``start`` (cron, local time), open for ``duration``."""

    name: str
    start: str
    duration: timedelta
    timezone: str
    runbooks: tuple[str, ...]

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def admits(self, runbook: str) -> bool:
        return "*" in self.runbooks or runbook in self.runbooks


@dataclass(frozen=True)
class PreApprovalPolicy:
    """Scheduled runs of these runbooks inside a window skip the human, within the caps."""

    runbooks: tuple[str, ...]
    max_replicas_moved: int
    max_bytes_moved: int
    require_rehearsal: bool


@dataclass(frozen=True)
class ClusterWindows:
    """What the file says about one cluster connection."""

    conn_id: str
    windows: tuple[Window, ...]
    pre_approval: PreApprovalPolicy | None
    approval_expires_after: timedelta = DEFAULT_APPROVAL_EXPIRY
    approvers: tuple[str, ...] = ()     # Airflow user names the approval is assigned to (empty: anyone)


@dataclass(frozen=True)
class WindowsFile:
    """A parsed windows file, with its path and content hash (recorded by every decision)."""

    path: str
    sha256: str
    clusters: tuple[ClusterWindows, ...]

    def cluster(self, conn_id: str) -> ClusterWindows | None:
        return next((c for c in self.clusters if c.conn_id == conn_id), None)


def windows_file_path(variable_value: str | None, environ: dict[str, str]) -> str | None:
    """The configured path: the Airflow Variable's value first, else the environment variable."""
    value = (variable_value or "").strip() or (environ.get(ENV_VAR) or "").strip()
    return value or None


def load_windows_file(path: str | Path) -> WindowsFile:
    """Read and check the whole file; raise :class:`WindowsFileError` on the first problem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise WindowsFileError(f"windows file {p}: cannot read it ({e.strerror}); fix the path in the Airflow "
                               f"Variable {VARIABLE} or ${ENV_VAR}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise WindowsFileError(f"windows file {p}: {len(raw)} bytes is larger than {MAX_FILE_BYTES}; "
                               "this file only declares windows and policies, keep it small")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise WindowsFileError(f"windows file {p}: not UTF-8 (byte {e.start}); save it as UTF-8") from None
    return parse_windows_text(text, str(p), hashlib.sha256(raw).hexdigest())


def parse_windows_text(text: str, path: str = "<windows file>", sha256: str | None = None) -> WindowsFile:
    """Parse the file's text (see the module docstring for the format)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else "?"
        raise WindowsFileError(f"{path}, line {line}: not valid YAML ({e.problem}); fix the syntax there "
                               "(indentation, quotes, a missing ':')") from None
    except yaml.YAMLError as e:
        raise WindowsFileError(f"{path}: not valid YAML ({e}); fix the syntax") from None
    reader = LineReader(path, WindowsFileError)
    if root is None:
        raise WindowsFileError(f"{path}, line 1: the file is empty; declare at least one cluster under 'clusters:'")
    top = reader.mapping(root, "the file", {"clusters"}, required={"clusters"})
    clusters_node = top["clusters"]
    clusters = reader.mapping(clusters_node, "clusters", None)
    if not clusters:
        raise reader.error(clusters_node, "'clusters' is empty", "name at least one cluster connection id")
    parsed = tuple(_cluster(reader, name, node) for name, node in clusters.items())
    digest = sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest()
    return WindowsFile(path=path, sha256=digest, clusters=parsed)


def _cluster(reader: LineReader, conn_id: str, node: yaml.Node) -> ClusterWindows:
    if not NAME.match(conn_id):
        raise reader.error(node, f"{conn_id!r} is not an Airflow connection id", "use the cluster's zk_conn_id")
    fields = reader.mapping(node, f"cluster {conn_id!r}", _CLUSTER_KEYS, required={"windows"})
    seq = fields["windows"]
    if not isinstance(seq, yaml.SequenceNode) or not seq.value:
        raise reader.error(seq, f"'windows' of {conn_id!r} must be a non-empty list",
                           "start each window with '- name: ...'")
    windows = tuple(_window(reader, conn_id, w) for w in seq.value)
    names = [w.name for w in windows]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise reader.error(seq, f"two windows of {conn_id!r} are named {dup!r}", "give each window its own name")
    policy = _policy(reader, conn_id, fields["pre_approval"]) if "pre_approval" in fields else None
    expiry = DEFAULT_APPROVAL_EXPIRY
    if "approval_expires_after" in fields:
        expiry = _duration(reader, fields["approval_expires_after"], f"approval_expires_after of {conn_id!r}",
                           MIN_APPROVAL_EXPIRY)
    approvers: tuple[str, ...] = ()
    if "approvers" in fields:
        approvers = reader.names(fields["approvers"], f"approvers of {conn_id!r}", "Airflow user names",
                                 "write e.g. [alice, bob]")
    return ClusterWindows(conn_id=conn_id, windows=windows, pre_approval=policy, approval_expires_after=expiry,
                          approvers=approvers)


def _window(reader: LineReader, conn_id: str, node: yaml.Node) -> Window:
    f = reader.mapping(node, f"a window of {conn_id!r}", _WINDOW_KEYS, required=_WINDOW_KEYS)
    name = reader.scalar(f["name"], "name")
    if not NAME.match(name):
        raise reader.error(f["name"], f"window name {name!r} has characters other than letters, digits, '_.-'",
                           "rename it")
    start = reader.scalar(f["start"], f"start of window {name!r}")
    from croniter import croniter      # here: a run without a windows file never loads it (start-up CPU)

    if not croniter.is_valid(start) or len(start.split()) != 5:
        raise reader.error(f["start"], f"start {start!r} of window {name!r} is not a 5-field cron expression",
                           "write minute hour day-of-month month day-of-week, e.g. '0 1 * * 2,4'")
    duration = _duration(reader, f["duration"], f"duration of window {name!r}")
    tz = reader.scalar(f["timezone"], f"timezone of window {name!r}")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise reader.error(f["timezone"], f"timezone {tz!r} of window {name!r} is not an IANA zone",
                           "write e.g. Europe/Berlin or UTC") from None
    runbooks = reader.names(f["runbooks"], f"runbooks of window {name!r}")
    return Window(name=name, start=start, duration=duration, timezone=tz, runbooks=runbooks)


def _duration(reader: LineReader, node: yaml.Node, what: str, least: timedelta = timedelta(minutes=1)) -> timedelta:
    text = reader.scalar(node, what).replace(" ", "")
    m = _DURATION.match(text)
    if not text or not m or not any(m.groups()):
        raise reader.error(node, f"{what} {text!r} is not a duration", "write e.g. 4h, 90m, 1h30m or 45s")
    d, h, mins, secs = (int(g or 0) for g in m.groups())
    value = timedelta(days=d, hours=h, minutes=mins, seconds=secs)
    if value < least or value > MAX_DURATION:
        low = f"{int(least.total_seconds())}s" if least < timedelta(minutes=1) else "1m"
        raise reader.error(node, f"{what} {text!r} is outside {low}..7d", f"give a duration between {low} and a week")
    return value


def _policy(reader: LineReader, conn_id: str, node: yaml.Node) -> PreApprovalPolicy:
    f = reader.mapping(node, f"pre_approval of {conn_id!r}", _POLICY_KEYS,
                       required={"runbooks", "max_replicas_moved", "max_bytes_moved"})
    size = reader.scalar(f["max_bytes_moved"], "max_bytes_moved")
    try:
        max_bytes_moved = parse_size(size, "max_bytes_moved")     # the rule every size input follows
    except InputRefused as exc:
        problem, _, fix = exc.reason.partition("; ")
        raise reader.error(f["max_bytes_moved"], f"max_bytes_moved {problem}", fix) from None
    return PreApprovalPolicy(
        runbooks=reader.names(f["runbooks"], f"pre_approval runbooks of {conn_id!r}"),
        max_replicas_moved=reader.integer(f["max_replicas_moved"], "max_replicas_moved", 0),
        max_bytes_moved=max_bytes_moved,
        require_rehearsal=reader.boolean(f["require_rehearsal"], "require_rehearsal")
        if "require_rehearsal" in f else True,
    )


def describe(value: Any) -> str:
    """A short human form of a window, for logs and reports."""
    if isinstance(value, Window):
        return f"{value.name} ({value.start} for {value.duration}, {value.timezone})"
    return str(value)
