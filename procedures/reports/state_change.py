"""What the brokers' state-change logs say about a stalled wave, for the run's report.

When a run is given where the brokers' logs are (the ``broker_logs`` Param: a folder, file or
glob reachable from the worker and the triggerer), ``execute_waves`` records it in the run
folder before it waits; when a wave stalls (the trigger's first stall warning, or a ``stalled``
or ``timeout`` event) :func:`write_stall_excerpt` merges those logs
(:func:`formats.state_change_files.state_change_excerpt`) for the wave's stuck partitions
and writes ``<run>/state_change/wave-<N>.log``; the final report shows every such excerpt.

The window ends at the newest entry about those partitions (``window_s`` long): log4j writes
the brokers' local time, which need not agree with the worker's clock (nor, on the emulator,
with the wall clock at all), and a stalled partition's last entries are what explain it.

Failure: never fails the run. A location that matches nothing or a file that cannot be read is
written into the excerpt as the reason (and logged as a warning); no ``broker_logs``: nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

from kafka_zk.errors import InvalidInput
from kafka_zk.files import read_json, write_json_atomic, write_text_atomic
from formats.state_change_files import state_change_excerpt

log = logging.getLogger(__name__)

FOLDER = "state_change"
SETTINGS = "settings.json"
DEFAULT_WINDOW_S = 600.0
MAX_REPORT_CHARS = 20_000


def remember_broker_logs(run_dir: str | Path, broker_logs: str | None, window_s: float = DEFAULT_WINDOW_S) -> None:
    """Record where the brokers' logs are for the stall hooks (nothing when not given)."""
    if not broker_logs or not str(broker_logs).strip():
        return
    write_json_atomic(Path(run_dir) / FOLDER / SETTINGS,
                      {"broker_logs": str(broker_logs).strip(), "window_s": float(window_s)})


def _partitions(pending: Iterable[str]) -> list[tuple[str, int]]:
    out = []
    for name in pending:
        topic, _, part = str(name).rpartition("-")
        if topic and part.isdigit():
            out.append((topic, int(part)))
    return out


def excerpt_path(run_dir: str | Path, wave_id: int) -> Path:
    return Path(run_dir) / FOLDER / f"wave-{int(wave_id)}.log"


def write_stall_excerpt(run_dir: str | Path, wave_id: int, pending: Iterable[str], reason: str) -> Path | None:
    """Write the excerpt for wave ``wave_id``'s stuck partitions; None when no logs were given."""

    settings = read_json(Path(run_dir) / FOLDER / SETTINGS)
    if not settings:
        return None
    tps = _partitions(pending)
    head = [f"# wave {wave_id}: {reason}",
            f"# stuck partitions: {', '.join(f'{t}-{p}' for t, p in tps) or 'none named'}",
            f"# broker logs: {settings['broker_logs']}"]
    try:
        if not tps:
            raise InvalidInput("no stuck partition named by the wave's progress")
        ex = state_change_excerpt(settings["broker_logs"], tps, None, float(settings["window_s"]))
        head.append(f"# {len(ex.files)} file(s); window {ex.start} .. {ex.end} (ends at the newest entry "
                    f"about these partitions); {ex.matched} entries, the last {min(ex.matched, 200)} shown")
        body = ex.text if ex.lines else "# no entry about these partitions in the logs\n"
    except InvalidInput as exc:
        log.warning("no state-change excerpt for wave %s: %s", wave_id, exc)
        body = f"# no excerpt: {exc}\n"
    path = excerpt_path(run_dir, wave_id)
    write_text_atomic(path, "\n".join(head) + "\n" + body)
    log.info("state-change excerpt for wave %s: %s", wave_id, path)
    return path


def read_excerpts(run_dir: str | Path) -> list[dict]:
    """The excerpts of a run, for the final report (each cut to :data:`MAX_REPORT_CHARS`)."""
    folder = Path(run_dir) / FOLDER
    out = []
    for path in sorted(folder.glob("wave-*.log"), key=lambda p: int(p.stem.split("-")[1])):
        text = path.read_text(encoding="utf-8", errors="replace")
        cut = len(text) > MAX_REPORT_CHARS
        out.append({"wave": int(path.stem.split("-")[1]), "path": str(path),
                    "text": text[-MAX_REPORT_CHARS:] if cut else text, "cut": cut})
    return out
