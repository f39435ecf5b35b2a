"""Start-up of every bundled scenario's FMU against a trivial pythonfmu FMU (the floor), in one run.

Each sample is a fresh process that has imported fmpy and nothing else of ours: from
fmi2Instantiate to the first 1 ms doStep returning (instantiate, initialize = setup + enter +
exit initialization mode, first step), through fmpy's FMU2Slave.  Medians of ``--runs``
processes per FMU, and the ratio of each median total to the floor's in the same run.  The
FMUs are extracted once: the samples are warm (the OS file cache, and the objects an FMU
ships or caches in its resources).  ``--importtime`` also prints, per top-level package, the
cumulative import time (``python -X importtime``) of what the FMU's slave module imports.

    python benchmarks/bench_startup.py [--fmus DIR] [--runs 5] [--names disk_ramp top]
    python benchmarks/bench_startup.py --fmus DIR --chain 40      # also pendulum_chain N = 40
    python benchmarks/bench_startup.py --fmus after --compare before   # two builds, one run
    python benchmarks/bench_startup.py --fmus after --compare before --names pendulum_chain \
        --chain 40                  # N = 10 and 40, both builds (before/chain40/ too)
    python benchmarks/bench_startup.py --cold        # also without the shipped object code
    python benchmarks/bench_startup.py --master fmusim   # also a C master, process start to end

``--master fmusim``: the reference C master (../shared/tools/masters: fmusim) run as a user
would (this venv's python3 first on PATH), from process start to its end after 10 steps of
``--h``: unzipping the FMU, starting Python, instantiating, stepping, writing its CSV.  The
floor's stock pythonfmu binary does not link libpython: it gets LD_PRELOAD of this
interpreter's libpython (README there); ours load Python themselves, asking the interpreter
for its paths once and keeping the answer in the cache folder ($EMBED_CACHE, else
~/.cache/embed-fmu: fmu_src/runtime/loader/python_query.c); the first sample of a fresh cache
asks it (60-90 ms more), the later ones read the kept answer.

FMUs missing from ``--fmus`` (default build/startup) are built there first (``embed-fmu
build``); the floor is benchmarks/floor_fmu.py, built with ``pythonfmu build``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, time
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
unzip, h = sys.argv[1], float(sys.argv[2])
md = read_model_description(unzip)
f = FMU2Slave(guid=md.guid, unzipDirectory=unzip,
              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="startup")
t0 = time.perf_counter()
f.instantiate()
t1 = time.perf_counter()
f.setupExperiment(startTime=0.0)
f.enterInitializationMode()
f.exitInitializationMode()
t2 = time.perf_counter()
f.doStep(0.0, h)
t3 = time.perf_counter()
symbolic = sorted(m for m in ("sympy", "symengine", "scipy") if m in sys.modules)
f.terminate()
f.freeInstance()
print(json.dumps({"instantiate": t1 - t0, "initialize": t2 - t1, "step": t3 - t2,
                  "total": t3 - t0, "symbolic": symbolic}))
"""


def build_missing(names, folder: Path, chain: int | None) -> dict:
    """{label: FMU path}, building what ``folder`` lacks."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    from bench_masters import floor_fmu
    out["floor (trivial pythonfmu)"] = floor_fmu(folder)
    for name in names:
        fmu = folder / f"{name}.fmu"
        if not fmu.exists():
            subprocess.run([sys.executable, str(ROOT / "build_fmu.py"), name, "--out",
                            str(folder)], check=True)
        out[name] = fmu
    if chain:
        sub = folder / f"chain{chain}"
        fmu = sub / "pendulum_chain.fmu"
        if not fmu.exists():
            subprocess.run([sys.executable, str(ROOT / "build_fmu.py"), "pendulum_chain",
                            "--set", f"N={chain}", "--out", str(sub)], check=True)
        out[f"pendulum_chain N={chain}"] = fmu
    return out


def sample(unzip: Path, h: float) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(unzip), str(h)], capture_output=True,
                         text=True, cwd=tempfile.gettempdir())
    if res.returncode:
        raise SystemExit(f"{unzip}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


MASTERS = ROOT.parent / "shared" / "tools" / "masters"


def master_sample(fmu: Path, h: float, floor: bool) -> float:
    """Seconds from starting fmusim to its end, 10 steps of ``h`` of ``fmu``."""
    import time
    from bench_masters import libpython
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EMBED_PYTHON")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if floor:
        env["LD_PRELOAD"] = libpython()
    with tempfile.TemporaryDirectory(prefix="bench_startup_master_") as tmp:
        argv = [str(MASTERS / "run"), "fmusim", "--interface-type", "cs", "--stop-time",
                repr(10 * h), "--output-interval", repr(h), "--output-file",
                str(Path(tmp) / "out.csv"), str(Path(fmu).resolve())]
        t0 = time.perf_counter()
        res = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True)
        took = time.perf_counter() - t0
    if res.returncode:
        raise SystemExit(f"fmusim on {fmu}: exit {res.returncode}: {res.stderr[-2000:]}")
    return took


def master_table(fmus: dict, runs: int, h: float) -> None:
    """fmusim's start-up of every FMU, interleaved, medians and ratios to the floor's."""
    floor_label = "floor (trivial pythonfmu)"
    load0 = os.getloadavg()[0]
    for label, fmu in fmus.items():                 # one untimed run each
        master_sample(fmu, h, label == floor_label)
    times = {label: [] for label in fmus}
    for _ in range(runs):
        for label, fmu in fmus.items():
            times[label].append(master_sample(fmu, h, label == floor_label))
    med = {label: statistics.median(t) for label, t in times.items()}
    print(f"\nC master (fmusim), process start to its end after 10 steps of {h * 1e3:g} ms, "
          f"medians of {runs}; load average {load0:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    print("| FMU | total (s) | min (s) | x floor |")
    print("|---|---|---|---|")
    for label, m in med.items():
        print(f"| {label} | {m:.3f} | {min(times[label]):.3f} | {m / med[floor_label]:.1f} |")


def importtime(unzip: Path) -> dict:
    """{top-level package: cumulative import time (s)} of the FMU's slave module."""
    res = unzip / "resources"
    pkg = next((p.name for p in res.iterdir() if p.name.startswith("fmu_src")), None)
    if pkg is None:
        return {}
    code = f"import sys; sys.path.insert(0, {str(res)!r}); import {pkg}.runtime.slave"
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                         text=True, cwd=tempfile.gettempdir()).stderr
    top = {}
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+\s+\|\s+(\d+)\s+\|( *)(\S+)", line)
        if m and len(m.group(2)) == 1:          # a top-level import's cumulative time
            root = m.group(3).split(".")[0]
            top[root] = top.get(root, 0.0) + int(m.group(1)) * 1e-6
    return top


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    import scenarios
    from fmpy import extract

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmus", default=str(ROOT / "build" / "startup"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--names", nargs="*", default=scenarios.NAMES)
    ap.add_argument("--chain", type=int, default=None, help="also pendulum_chain at this N")
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument("--h", type=float, default=1e-3)
    ap.add_argument("--cold", action="store_true",
                    help="also each FMU without its shipped object code (objects.pkl removed, "
                         "as on another CPU: Kane's terms still shipped)")
    ap.add_argument("--master", choices=("fmusim",), default=None,
                    help="also the start-up in a C master (fmusim), process start to end")
    ap.add_argument("--compare", nargs="*", default=[],
                    help="folders of the same FMUs built otherwise (before a change), "
                         "measured in the same run")
    args = ap.parse_args(argv)

    fmus = build_missing(args.names, Path(args.fmus), args.chain)
    for other in args.compare:
        for name in args.names:
            if (Path(other) / f"{name}.fmu").exists():
                fmus[f"{name} ({Path(other).name})"] = Path(other) / f"{name}.fmu"
        chain = Path(other) / f"chain{args.chain}" / "pendulum_chain.fmu"
        if args.chain and chain.exists():
            fmus[f"pendulum_chain N={args.chain} ({Path(other).name})"] = chain
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        unzips = {label: Path(extract(str(f), str(Path(tmp) / re.sub(r"\W", "_", label))))
                  for label, f in fmus.items()}
        if args.cold:
            for label in [k for k in unzips if k in args.names or k.startswith("pendulum_chain N=")]:
                cold = Path(tmp) / (re.sub(r"\W", "_", label) + "_cold")
                shutil.copytree(unzips[label], cold)
                for obj in cold.glob("resources/formed/objects.pkl"):
                    obj.unlink()
                unzips[f"{label} (cold: no objects)"] = cold
        load0 = os.getloadavg()[0]
        for unzip in unzips.values():           # one untimed start each: the file cache warm
            sample(unzip, args.h)
        runs = {label: [] for label in unzips}
        for _ in range(args.runs):              # interleaved: the machine's load hits all alike
            for label, unzip in unzips.items():
                runs[label].append(sample(unzip, args.h))
        med = {label: {k: statistics.median(r[k] for r in rs)
                       for k in ("instantiate", "initialize", "step", "total")}
               for label, rs in runs.items()}
        floor = med["floor (trivial pythonfmu)"]["total"]
        print(f"start-up, fmi2Instantiate to the first {args.h * 1e3:g} ms doStep returning, "
              f"fmpy, fresh processes, medians of {args.runs}; load average "
              f"{load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
              f"on {os.cpu_count()} CPUs")
        print("| FMU | instantiate (s) | initialize (s) | first step (s) | total (s) | "
              "x floor | sympy/symengine/scipy loaded |")
        print("|---|---|---|---|---|---|---|")
        for label, m in med.items():
            loaded = ",".join(runs[label][-1]["symbolic"]) or "-"
            print(f"| {label} | {m['instantiate']:.3f} | {m['initialize']:.3f} | "
                  f"{m['step']:.3f} | {m['total']:.3f} | {m['total'] / floor:.1f} | {loaded} |")
        if args.master:
            master_table(fmus, args.runs, args.h)
        if args.importtime:
            print("\nimport time of the slave module (python -X importtime, cumulative, s)")
            for label, unzip in unzips.items():
                top = importtime(unzip)
                if top:
                    big = sorted(top.items(), key=lambda kv: -kv[1])[:8]
                    print(f"{label}: total {sum(top.values()):.3f}: "
                          + ", ".join(f"{k} {v:.3f}" for k, v in big))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
