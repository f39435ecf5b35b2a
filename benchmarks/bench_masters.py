"""disk_ramp stepped at 1 ms by a C master (benchmarks/c_master.c, no Python in the process:
the FMU's loader starts one) and by fmpy's FMU2Slave, in one run: per-step cost and start-up
(fmi2Instantiate to the end of the first doStep).  fmusim and the compliance checker are not
timed: their process start-up varies by more than 8000 steps cost.

    python benchmarks/bench_masters.py --fmu build/disk_ramp.fmu [--startup build]

--startup DIR also prints each FMU's start-up in the C master, one fresh process each.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fmpy
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

HERE = Path(__file__).resolve().parent
OUTPUTS = ["q1", "q2", "u1", "u2"]


def env():
    e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e["PATH"]
    return e


def c_master(unzip, md, steps, h, tmp):
    exe = Path(tmp) / "c_master"
    subprocess.run(["gcc", "-O2", "-I", str(Path(fmpy.__file__).parent / "c-code"), "-o", str(exe),
                    str(HERE / "c_master.c"), "-ldl"], check=True)
    vrs = [str(v.valueReference) for v in md.modelVariables if v.name in OUTPUTS]
    out = subprocess.run([str(exe), str(unzip), md.coSimulation.modelIdentifier, md.guid,
                          str(steps), str(h), *vrs], env=env(), capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def fmpy_slave(unzip, md, steps, h):
    vrs = [v.valueReference for v in md.modelVariables if v.name in OUTPUTS]
    f = FMU2Slave(guid=md.guid, unzipDirectory=str(unzip),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    t0 = time.perf_counter()
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    f.doStep(0.0, h)
    startup = time.perf_counter() - t0
    dt = []
    for k in range(1, steps):
        a = time.perf_counter()
        f.doStep(k * h, h)
        f.getReal(vrs)
        dt.append(time.perf_counter() - a)
    f.terminate()
    f.freeInstance()
    dt.sort()
    return {"startup_s": startup, "median_us": 1e6 * statistics.median(dt),
            "p99_us": 1e6 * dt[int(0.99 * len(dt))]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmu", default="build/disk_ramp.fmu")
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--startup", metavar="DIR", help="also time every FMU in DIR's start-up")
    a = ap.parse_args()
    h = 1e-3
    md = read_model_description(a.fmu)
    unzip = Path(extract(a.fmu))
    with tempfile.TemporaryDirectory() as tmp:
        c = c_master(unzip, md, a.steps, h, tmp)
        py = fmpy_slave(unzip, md, a.steps, h)
    shutil.rmtree(unzip, ignore_errors=True)
    print(f"disk_ramp, {a.steps} steps of 1 ms, doStep + getReal({', '.join(OUTPUTS)})")
    print(f"{'master':40s} {'median us':>10s} {'p99 us':>8s} {'start-up s':>11s}")
    print(f"{'C master (benchmarks/c_master.c)':40s} {c['median_us']:10.1f} {c['p99_us']:8.1f} "
          f"{c['startup_s']:11.3f}")
    print(f"{'fmpy FMU2Slave (Python master)':40s} {py['median_us']:10.1f} {py['p99_us']:8.1f} "
          f"{py['startup_s']:11.3f}")
    print(f"{'ratio C / fmpy (medians)':40s} {c['median_us'] / py['median_us']:10.2f}")
    if a.startup:
        print("\nstart-up in the C master (fmi2Instantiate to the end of the first 10 ms doStep)")
        for fmu in sorted(Path(a.startup).glob("*.fmu")):
            md = read_model_description(fmu)
            unzip = Path(extract(fmu))
            with tempfile.TemporaryDirectory() as tmp:
                s = c_master(unzip, md, 2, 0.01, tmp)["startup_s"]
            shutil.rmtree(unzip, ignore_errors=True)
            print(f"  {fmu.stem:16s} {s:6.2f} s")


if __name__ == "__main__":
    main()
