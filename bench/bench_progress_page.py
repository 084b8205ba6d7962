"""What the live progress page costs: reading a run folder into the page's figures and rendering it,
per request, and the executor's write of one poll — for runs of 7, 73 and 500 waves.

The run folders are written here as the executor and the plan write them (``waves.json`` with the
plan's partitions, ``plan/waves.json`` with predictions, ``live_progress.json`` with one poll per
started wave, ``windows.json`` with a pause): a third of the waves done, one copying, the rest
pending. Timings are the median of ``--repeat`` calls of :func:`procedures.live_progress.render_progress_page`
(what the reports app runs for ``/kafka-runbooks/runs/<dag>/<run>/progress``, without Airflow's
login check and DB lookup) — just after ``waves.json`` changed (parsed again) and on a refresh
(parsed ``waves.json`` reused) — and of :func:`procedures.waves.poll_record.record_poll`.

Usage: ``python bench/bench_progress_page.py [--repeat 30]``. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafka_zk.codecs import TopicPartition  # noqa: E402
from procedures.run_folder import RunFolder  # noqa: E402
from procedures.live_progress import _BOOKS, render_progress_page  # noqa: E402
from procedures.waves.poll_record import record_poll  # noqa: E402
from procedures.waves.book import FROM_LOG_SIZES, WaveBook, WaveMove, WaveProgress, WaveSpec  # noqa: E402

MIB = 1024 ** 2


def make_run(root: Path, waves: int, per_wave: int) -> RunFolder:
    folder = RunFolder(root).ensure()
    done = waves // 3
    specs = []
    for w in range(waves):
        moves = tuple(WaveMove(TopicPartition(f"topic-{w:04d}", p), (1, 2, 3), (4, 2, 3), 512 * MIB)
                      for p in range(per_wave))
        status = "done" if w < done else "submitted" if w == done else "pending"
        specs.append(WaveSpec(w, moves, status, 1000.0 + 60 * w if w <= done else None,
                              1050.0 + 60 * w if w < done else None))
    WaveBook("h" * 64, tuple(specs)).save(folder.wave_progress)
    folder.plan_dir.mkdir(parents=True, exist_ok=True)
    folder.write_json(folder.plan_dir / "waves.json", {"version": 1, "waves": [
        {"index": w, "predicted_seconds": 55.0} for w in range(waves)]})
    folder.write_json(folder.root / "windows.json", {"pauses": [
        {"before_wave": 1, "at": "2026-11-26T02:00:00+00:00", "reason": "would not fit", "resumes_at":
         "2026-11-26T02:10:00+00:00", "throttles": "kept", "resumed_at": "2026-11-26T02:10:01+00:00"}]})
    for w in range(done + 1):
        left = 0 if w < done else per_wave * 256 * MIB
        record_poll(folder.root, WaveProgress(w, per_wave if w < done else per_wave // 2, per_wave, left,
                                              per_wave * 512 * MIB, (), FROM_LOG_SIZES),
                    40 * MIB, 0.0, 50 * MIB, 1000.0 + 60 * w)
    return folder


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    print("| waves | partitions | page, waves.json changed: ms | page, refresh: ms | page size KiB | record_poll ms |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
        for waves, per_wave in ((7, 428), (73, 41), (500, 200)):
            folder = make_run(Path(tmp) / f"run-{waves}", waves, per_wave)
            page = render_progress_page(folder, "decommission_brokers", "manual__bench", active=True, now=2000.0)
            def page_ms(cold: bool) -> float:
                def once() -> None:
                    if cold:
                        _BOOKS.clear()          # as after a wave started or ended: waves.json parsed again
                    render_progress_page(folder, "decommission_brokers", "manual__bench", active=True, now=2000.0)
                return median_ms(once, args.repeat)
            cold, warm = page_ms(True), page_ms(False)
            current = waves // 3
            poll = WaveProgress(current, 1, per_wave, per_wave * 200 * MIB, per_wave * 512 * MIB, (), FROM_LOG_SIZES)
            write = median_ms(lambda: record_poll(folder.root, poll, 40 * MIB, 0.0, 50 * MIB, 2000.0), args.repeat)
            print(f"| {waves} | {waves * per_wave:,} | {cold:.1f} | {warm:.1f} | {len(page.encode()) / 1024:.1f} | "
                  f"{write:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
