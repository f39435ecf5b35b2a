"""Run the C and C++ FMI masters (OMSimulator, fmusim, the compliance checker, ecos) on an FMU
the way a user of each would, with no LD_PRELOAD, and read their result files."""

import csv
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT.parent / "shared" / "tools" / "masters"   # ../shared/tools/masters (README)
NAMES = ("oms", "fmusim", "fmucheck", "ecos")


def env(**extra):
    """The master's environment: the user activated this venv (its python3 first on PATH)."""
    e = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EMBED_PYTHON")}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    e.update(extra)
    return e


def ecos_binary():
    """ecospy's ecos command line tool (made executable: the wheel drops the bit)."""
    import importlib.util
    spec = importlib.util.find_spec("ecospy")     # not imported: it needs libtbb on the path
    exe = Path(spec.submodule_search_locations[0]) / "binaries" / "ecos"
    if not os.access(exe, os.X_OK):
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


def command(master, fmu, out, stop, step):
    """argv and extra environment of `master` simulating `fmu` to the CSV file `out`."""
    run = str(MASTERS / "run")
    if master == "oms":
        mode = [] if fmu.endswith(".ssp") else ["--mode=cs"]
        return [run, "oms", fmu, f"--stopTime={stop}", f"--stepSize={step}",
                f"--resultFile={out}", *mode], {}
    if master == "fmusim":
        return [run, "fmusim", "--interface-type", "cs", "--stop-time", str(stop),
                "--output-interval", str(step), "--output-file", str(out), fmu], {}
    if master == "fmucheck":
        return [run, "fmucheck", "-k", "cs", "-h", str(step), "-s", str(stop), "-n", "0",
                "-o", str(out), "-l", "3", fmu], {}
    if master == "ecos":
        lib = str(Path(sys.prefix) / "lib")
        return [str(ecos_binary()), "simulate", "--path", fmu, "--stopTime", str(stop),
                "--stepSize", str(step)], {"LD_LIBRARY_PATH": lib}
    raise ValueError(master)


def simulate(master, fmu, workdir, stop=8.0, step=0.01, **extra_env):
    """Run `master`; returns (CompletedProcess, path of its CSV result)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{master}.csv"
    argv, extra = command(master, str(fmu), out, stop, step)
    proc = subprocess.run(argv, cwd=workdir, env=env(**extra, **extra_env), capture_output=True,
                          text=True, timeout=600)
    if master == "ecos":                      # ecos names the file after the FMU's model
        out = workdir / (Path(fmu).stem + ".csv")
    return proc, out


def last_row(path, qualified=False):
    """The last row of a master's CSV as {variable name: float}; `qualified`: names as
    "component.variable" (a system of FMUs)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f, skipinitialspace=True) if r]
    names = [re.sub(r"\[.*\]$", "", h.strip()).replace("::", ".") for h in rows[0]]
    names = [".".join(n.split(".")[-2 if qualified else -1:]) for n in names]
    out = {}
    for name, value in zip(names, rows[-1]):
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out
