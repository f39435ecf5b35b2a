"""Studies at scale (issue 16): a 1,000-case disk_ramp study on Dask, 1 and 2 workers.

    python benchmarks/bench_sweep.py [--cases 1000] [--stop-time 2] [--runner engine|fmu]
    python benchmarks/bench_sweep.py --fmu before=OLD/disk_ramp.fmu --fmu after=NEW/disk_ramp.fmu

``--fmu LABEL=PATH`` (repeatable): the FMU runner on each built FMU instead (a fresh FMU
instance per case, issue 30's start-up), 2 workers with the default chunks, the FMUs one
after the other in one run: cases per second of each.

disk_ramp with mu over linspace(0.05, 0.6, N), from rest to ``--stop-time`` in 0.01 s
communication steps (RK4 at 1 ms), summaries final_mode, events, first_entry:rolling,
max_residual; results written to Parquet as ``embed-fmu sweep`` does.  Each LocalCluster
(one thread per worker process) is warmed first (a case per worker: the scenario built,
its modes compiled), then timed.  Printed, in one run:

- cases per second on 1 and 2 workers with the default chunks, and on 2 workers with one
  case per task;
- per task: the run itself (the cases' time inside the task) against the scheduler's
  overhead, (workers x wall - busy) / tasks: what each task costs beyond its cases
  (scheduling, transfer of the rows, the client writing its Parquet part);
- the bare scheduler: the round trip of 1,000 empty tasks.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _noop(x):
    return x


def study_spec(n: int, stop: float, runner: str) -> dict:
    return {"stop_time": stop, "step": 0.01, "runner": runner,
            "parameters": {"mu": {"linspace": [0.05, 0.6, n]}},
            "summaries": ["final_mode", "events", "first_entry:rolling", "max_residual"]}


def measure(workers: int, chunk, args, tmp: Path, model="disk_ramp") -> dict:
    from distributed import Client, LocalCluster

    from fmu_src.host.study import Study

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        warm = Study(model, study_spec(workers, args.stop_time, args.runner),
                     out=tmp / f"warm{workers}{chunk}")
        warm.run(client=client, chunk=1, progress=False)
        study = Study(model, study_spec(args.cases, args.stop_time, args.runner),
                      out=tmp / f"w{workers}c{chunk}")
        df = study.run(client=client, chunk=chunk, progress=False)
        r = dict(study.last_run)
        bare = None
        if workers == 2 and chunk is None:
            t0 = time.perf_counter()
            futures = client.map(_noop, range(1000), pure=False)
            client.gather(futures)
            bare = (time.perf_counter() - t0) / 1000
    assert (df["status"] == 0).all(), df[df["status"] != 0]["error"].tolist()[:3]
    r.update(workers=workers, chunk=chunk or round(r["cases"] / r["tasks"]),
             per_case=statistics.median(df["seconds"]), bare=bare,
             rolling=int(df["first_entry_rolling"].notna().sum()))
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--stop-time", type=float, default=2.0)
    ap.add_argument("--runner", choices=("engine", "fmu"), default="engine")
    ap.add_argument("--fmu", action="append", default=[], metavar="LABEL=PATH",
                    help="the FMU runner on this built disk_ramp FMU (repeatable): cases/s each")
    args = ap.parse_args(argv)
    if args.fmu:
        return compare_fmus(args)
    load0 = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        for workers, chunk in ((1, None), (2, None), (2, 1)):
            rows.append(measure(workers, chunk, args, Path(tmp)))
            print(f"... {workers} worker(s), chunk {rows[-1]['chunk']}: "
                  f"{rows[-1]['wall']:.1f} s", file=sys.stderr, flush=True)
    print(f"\ndisk_ramp, {args.cases} cases (mu over [0.05, 0.6]), {args.stop_time:g} s each "
          f"in 0.01 s steps, runner {args.runner}; {rows[0]['rolling']} cases reach rolling\n")
    head = ("workers", "cases/task", "tasks", "wall s", "cases/s", "speed-up",
            "case ms (median)", "run/task ms", "CPU/task ms", "overhead/task ms", "busy")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    base = rows[0]["cases"] / rows[0]["wall"]
    for r in rows:
        rate = r["cases"] / r["wall"]
        over = (r["workers"] * r["wall"] - r["busy"]) / r["tasks"]
        print(" | ".join([str(r["workers"]), str(r["chunk"]), str(r["tasks"]),
                          f"{r['wall']:.1f}", f"{rate:.1f}", f"{rate / base:.2f}",
                          f"{1e3 * r['per_case']:.1f}", f"{1e3 * r['busy'] / r['tasks']:.1f}",
                          f"{1e3 * r['cpu'] / r['tasks']:.1f}",
                          f"{1e3 * over:.1f}",
                          f"{r['busy'] / (r['workers'] * r['wall']):.0%}"]))
    bare = next(r["bare"] for r in rows if r["bare"] is not None)
    print(f"\nbare scheduler, 1,000 empty tasks on 2 workers: {1e3 * bare:.2f} ms a task "
          "(round trip, throughput)")
    print("overhead/task = (workers x wall - busy) / tasks; busy = the cases' time inside "
          "the tasks; CPU = the worker's CPU time in them (below the wall time when other "
          "processes share the cores)")
    print(f"{os.cpu_count()} cores; load average (1 min) {load0:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")


def compare_fmus(args) -> None:
    """cases/s of the FMU runner on each ``--fmu``, 2 workers, default chunks, one run."""
    args.runner = "fmu"
    load0 = os.getloadavg()[0]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        for i, item in enumerate(args.fmu):
            label, _, path = item.partition("=")
            sub = Path(tmp) / f"fmu{i}"
            sub.mkdir()
            rows[label] = measure(2, None, args, sub, str(Path(path).resolve()))
            print(f"... {label}: {rows[label]['wall']:.1f} s", file=sys.stderr, flush=True)
    print(f"\ndisk_ramp, {args.cases} cases (mu over [0.05, 0.6]), {args.stop_time:g} s each in "
          "0.01 s steps, FMU runner (fmpy, a fresh instance per case), 2 workers\n")
    print("FMU | wall s | cases/s | case ms (median) | busy")
    print("--- | --- | --- | --- | ---")
    for label, r in rows.items():
        print(f"{label} | {r['wall']:.1f} | {r['cases'] / r['wall']:.1f} | "
              f"{1e3 * r['per_case']:.1f} | {r['busy'] / (2 * r['wall']):.0%}")
    print(f"{os.cpu_count()} cores; load average (1 min) {load0:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
