"""The engine runner's cache of compiled modes (issue 30, ``embed.modes.cache``): a script's
first run against its second, and a study's cases per second without and with the cache.

    python benchmarks/bench_cache.py                     # disk_fence, pendulum_chain N=10, slider_crank3
    python benchmarks/bench_cache.py --runs 5 --until 2 --study-cases 400

Every run is a fresh process (``python -c``) that builds the scenario, makes its default
simulator and advances it to ``--until`` s: "cold" with an emptied cache folder, "warm" with
the folder the cold run filled, "off" with ``EMBED_CACHE=off``.  Columns (medians over
``--runs``): the process's wall time, the time from the built scenario to the end of the run
(key, load, compiles, stepping), the LLVM compiles counted (symengine ``Lambdify`` with the
LLVM backend and llvmlite ``emit_object``; not the engine's four helpers, ``native._optimized``,
compiled once per process) and whether every run's trajectory hashed alike.
The study: ``Study(model).run(workers=2)`` over ``--study-cases`` cases in a fresh process,
off against warm.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = r'''
import time
t0 = time.perf_counter()
import hashlib, json, sys
import llvmlite.binding as llvm
import symengine
COUNT = [0]
_lambdify, _emit = symengine.Lambdify, llvm.TargetMachine.emit_object
def lambdify(*a, **kw):
    COUNT[0] += kw.get("backend") == "llvm"
    return _lambdify(*a, **kw)
def emit(self, *a, **kw):
    COUNT[0] += sys._getframe(1).f_code.co_name != "_optimized"   # not the engine's helpers
    return _emit(self, *a, **kw)
symengine.Lambdify, llvm.TargetMachine.emit_object = lambdify, emit
import numpy as np
import scenarios
name, options, until = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
sc = scenarios.load(name).build(**options)
t1 = time.perf_counter()
sim = sc.simulator()
h = hashlib.sha256()
for k in range(1, int(round(until / 0.01)) + 1):
    sim.advance(k * 0.01)
    h.update(np.asarray(sim.state.x, dtype=float).tobytes())
h.update(repr(sim.events).encode())
t2 = time.perf_counter()
from embed.modes import cache
cache.save_all()
print(json.dumps({"run": t2 - t1, "compiles": COUNT[0], "hash": h.hexdigest()}))
'''

STUDY = r'''
import sys, time
from fmu_src.host.study import Study
n = int(sys.argv[2])
spec = {"stop_time": 1.0, "step": 0.01,
        "parameters": {"mu": [0.05 + 0.55 * i / (n - 1) for i in range(n)]},
        "summaries": ["final_mode", "events"]}
t = time.perf_counter()
df = Study(sys.argv[1], spec).run(workers=2, progress=False)
print(len(df), time.perf_counter() - t, int((df["status"] == 0).sum()))
'''

CASES = (("disk_fence", {}), ("pendulum_chain", {"N": 10}), ("slider_crank3", {}))


def _child(script, args, cache):
    import time
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMBED_CACHE": str(cache)}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    return time.perf_counter() - t, out.strip().splitlines()[-1]


def scripts(runs: int, until: float, cases=CASES):
    rows = []
    for name, options in cases:
        got = {"off": [], "cold": [], "warm": []}
        folder = Path(tempfile.mkdtemp(prefix="bench_cache_"))
        args = [name, json.dumps(options), str(until)]
        for _ in range(runs):
            wall, out = _child(RUN, args, "off")
            got["off"].append((wall, json.loads(out)))
            shutil.rmtree(folder, ignore_errors=True)
            for kind in ("cold", "warm"):
                wall, out = _child(RUN, args, folder)
                got[kind].append((wall, json.loads(out)))
        shutil.rmtree(folder, ignore_errors=True)
        hashes = {r["hash"] for v in got.values() for _, r in v}
        label = name + "".join(f" {k}={v}" for k, v in options.items())
        for kind, v in got.items():
            rows.append((label, kind, statistics.median(w for w, _ in v),
                         statistics.median(r["run"] for _, r in v),
                         statistics.median(r["compiles"] for _, r in v), len(hashes) == 1))
    print(f"\nscript runs, fresh processes, medians of {runs} (advance to {until} s)")
    print("| scenario | cache | process (s) | simulator + run (s) | LLVM compiles | bits equal |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.3f} | {r[4]:.0f} | {r[5]} |")


def study(n: int, model="disk_ramp", runs=1):
    folder = Path(tempfile.mkdtemp(prefix="bench_cache_study_"))
    _child(RUN, [model, "{}", "1.0"], folder)        # fills the cache (the script's run)
    print(f"\nstudy of {model}: {n} engine cases, 2 worker processes, fresh client process "
          f"(medians of {runs})")
    print("| cache | cases | ok | wall (s) | cases/s |")
    print("|---|---|---|---|---|")
    res = {"off": [], "warm": []}
    for _ in range(runs):                # interleaved: the load of the machine drifts
        for kind, cache in (("off", "off"), ("warm", folder)):
            _, out = _child(STUDY, [model, str(n)], cache)
            cases, wall, ok = out.split()
            res[kind].append((int(cases), float(wall), int(ok)))
    for kind, r in res.items():
        wall = statistics.median(x[1] for x in r)
        print(f"| {kind} | {r[0][0]} | {r[0][2]} | {wall:.1f} | {r[0][0] / wall:.1f} |")
    shutil.rmtree(folder, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--until", type=float, default=1.0)
    ap.add_argument("--study-cases", type=int, default=200, help="0: no study")
    ap.add_argument("--study-runs", type=int, default=1)
    a = ap.parse_args(argv)
    scripts(a.runs, a.until)
    if a.study_cases:
        study(a.study_cases, runs=a.study_runs)


if __name__ == "__main__":
    main()
