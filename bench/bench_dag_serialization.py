"""CPU of serializing each runbook DAG as ``dag.test()`` does, with jsonschema's own ``validate`` and
with :func:`cli.local_run.check_param_schemas_once` (each Param schema checked once).

``dag.test()`` serializes the DAG it runs at least twice per run (Airflow 3.3), and serializing
resolves every Param of every task: with the library's ``validate`` each resolve re-checks the
schema against JSON Schema's metaschema. Prints one Markdown row per runbook (median CPU seconds
of ``--repeat`` serializations each way, and whether the serialized DAGs are equal) for BENCHMARKS.md.

    PYTHONPATH=. .venv/bin/python bench/bench_dag_serialization.py [--repeat 5]

Fails (exit 1) when a runbook serializes differently with the checks made once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        started = time.process_time()
        out = fn()
        times.append(time.process_time() - started)
    return statistics.median(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from cli.local_run import configure_local_airflow

    configure_local_airflow(tempfile.mkdtemp(prefix="kr-bench-serialize-"))
    import jsonschema
    from airflow.serialization.serialized_objects import DagSerialization

    from cli.local_run import check_param_schemas_once, load_dag

    library_validate = jsonschema.validate
    dag_ids = sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__")
    print("| runbook | tasks | Params | CPU s, schema checked each resolve | CPU s, each schema once | same DAG |")
    print("| --- | --- | --- | --- | --- | --- |")
    differ = []
    for dag_id in dag_ids:
        dag = load_dag(dag_id)
        jsonschema.validate = library_validate
        before, expected = cpu_of(lambda: DagSerialization.to_dict(dag), args.repeat)
        check_param_schemas_once()
        after, got = cpu_of(lambda: DagSerialization.to_dict(dag), args.repeat)
        jsonschema.validate = library_validate
        same = got == expected
        if not same:
            differ.append(dag_id)
        print(f"| {dag_id} | {len(dag.tasks)} | {len(dag.params)} | {before:.3f} | {after:.3f} | {'yes' if same else 'NO'} |")
    if differ:
        print(f"serialized differently with each schema checked once: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
