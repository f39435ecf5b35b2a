"""disk_ramp stepped at 1 ms by a C master (benchmarks/c_master.c, no Python in the process:
the FMU's loader starts one) and by fmpy's FMU2Slave, with the loader's fast path on and off
(EMBED_FAST_STEP=0; fmu_src/runtime/fast_step.py), against the trivial pythonfmu FMU
(benchmarks/floor_fmu.py) through fmpy, in one run: per-step cost (doStep + getReal, medians)
and start-up (fmi2Instantiate to the end of the first doStep).  fmusim and the compliance
checker are not timed: their process start-up varies by more than 8000 steps cost.

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


def env(fast=True, preload=False):
    """A C master's environment: this interpreter's PATH, the fast path on or off, and with
    ``preload`` this interpreter's libpython in LD_PRELOAD (a stock pythonfmu binary, the
    floor's, does not load it itself; ours do)."""
    e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e["PATH"]
    e["EMBED_FAST_STEP"] = "1" if fast else "0"
    if preload:
        e["LD_PRELOAD"] = libpython()
    return e


def libpython():
    """This interpreter's shared libpython (what a stock pythonfmu binary needs preloaded)."""
    import sysconfig
    return str(Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("LDLIBRARY"))


def compile_master(tmp, name="c_master"):
    """benchmarks/NAME.c compiled into ``tmp`` (fmpy's copy of the FMI 2.0 headers)."""
    exe = Path(tmp) / name
    subprocess.run(["gcc", "-O2", "-I", str(Path(fmpy.__file__).parent / "c-code"), "-o", str(exe),
                    str(HERE / f"{name}.c"), "-ldl"], check=True)
    return exe


def c_master(unzip, md, steps, h, tmp, fast=True, outputs=OUTPUTS):
    exe = Path(tmp) / "c_master"
    if not exe.exists():
        compile_master(tmp)
    vrs = [str(v.valueReference) for v in md.modelVariables if v.name in outputs]
    out = subprocess.run([str(exe), str(unzip), md.coSimulation.modelIdentifier, md.guid,
                          str(steps), str(h), *vrs], env=env(fast), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def fmpy_slave(unzip, md, steps, h, fast=True, outputs=OUTPUTS):
    os.environ["EMBED_FAST_STEP"] = "1" if fast else "0"    # read by the slave at instantiate
    vrs = [v.valueReference for v in md.modelVariables if v.name in outputs]
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
    fast_steps = -1
    if hasattr(f.dll, "embed_fast_steps"):
        import ctypes
        f.dll.embed_fast_steps.restype = ctypes.c_long
        f.dll.embed_fast_steps.argtypes = [ctypes.c_void_p]
        fast_steps = f.dll.embed_fast_steps(f.component)
    f.terminate()
    f.freeInstance()
    os.environ.pop("EMBED_FAST_STEP", None)
    dt.sort()
    return {"startup_s": startup, "median_us": 1e6 * statistics.median(dt),
            "p99_us": 1e6 * dt[int(0.99 * len(dt))], "fast_steps": fast_steps}


def floor_fmu(folder):
    """The trivial pythonfmu FMU (benchmarks/floor_fmu.py), built into ``folder`` unless there."""
    out = Path(folder) / "Floor.fmu"
    if not out.exists():
        subprocess.run([sys.executable, "-m", "pythonfmu", "build", "-f",
                        str(HERE / "floor_fmu.py"), "--dest", str(folder)], check=True,
                       capture_output=True)
    return out


def row(label, r):
    fs = r.get("fast_steps", -1)
    print(f"{label:44s} {r['median_us']:10.2f} {r['p99_us']:8.1f} {r['startup_s']:11.3f} "
          f"{fs if fs >= 0 else '-':>11}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fmu", default="build/disk_ramp.fmu")
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--startup", metavar="DIR", help="also time every FMU in DIR's start-up")
    a = ap.parse_args()
    h = 1e-3
    md = read_model_description(a.fmu)
    unzip = Path(extract(a.fmu))
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        compile_master(tmp)
        c_fast = c_master(unzip, md, a.steps, h, tmp, fast=True)
        c_slow = c_master(unzip, md, a.steps, h, tmp, fast=False)
        py_fast = fmpy_slave(unzip, md, a.steps, h, fast=True)
        py_slow = fmpy_slave(unzip, md, a.steps, h, fast=False)
        floor = floor_fmu(tmp)
        fmd = read_model_description(floor)
        funzip = Path(extract(floor))
        fl = fmpy_slave(funzip, fmd, a.steps, h, outputs=["x"])
        shutil.rmtree(funzip, ignore_errors=True)
    shutil.rmtree(unzip, ignore_errors=True)
    load = f"{load[0]:.2f} before, {os.getloadavg()[0]:.2f} after (1-min load, 2 cores)"
    print(f"disk_ramp, {a.steps} steps of 1 ms, doStep + getReal({', '.join(OUTPUTS)}); load "
          f"{load}")
    print(f"{'master':44s} {'median us':>10s} {'p99 us':>8s} {'start-up s':>11s} "
          f"{'C doSteps':>11s}")
    row("C master, fast path (benchmarks/c_master.c)", c_fast)
    row("C master, EMBED_FAST_STEP=0", c_slow)
    row("fmpy FMU2Slave, fast path", py_fast)
    row("fmpy FMU2Slave, EMBED_FAST_STEP=0", py_slow)
    row("fmpy FMU2Slave, the floor (floor_fmu.py)", fl)
    print(f"{'ratio fmpy fast / floor (medians)':44s} {py_fast['median_us'] / fl['median_us']:10.2f}")
    print(f"{'ratio fmpy off / floor (medians)':44s} {py_slow['median_us'] / fl['median_us']:10.2f}")
    print(f"{'ratio C fast / C off (medians)':44s} {c_fast['median_us'] / c_slow['median_us']:10.2f}")
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
