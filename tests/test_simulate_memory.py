"""Memory per fmpy ``simulate_fmu`` call (issue 33): each call extracts the FMU anew and deletes
the extraction after its run.  The FMU's packages used to be imported anew from each
extraction, and every earlier generation stayed behind (pythonfmu's binary keeps each class it
is given): 4.5 MB per call of disk_ramp.  They now stay imported and are pointed at the new
extraction (the entry script, ``fmu_src.builder.build.ENTRY``).

What is left, about 0.35 MB a call, is native: every extraction is a new path, so the process
maps a new copy of the FMU's two binaries (pythonfmu's is 346 kB and has STB_GNU_UNIQUE
symbols, which makes glibc keep it loaded after dlclose)."""

import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import gc, json, sys
    from fmpy import simulate_fmu
    def rss():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS"))
    def slave():
        return [id(m) for k, m in sorted(sys.modules.items()) if k.endswith(".runtime.slave")]
    fmu, warm, n = sys.argv[1], 5, 40
    rows = [simulate_fmu(fmu, stop_time=0.05, output_interval=1e-3) for _ in range(warm)]
    gc.collect()
    before, ids = rss(), slave()
    for _ in range(n):
        rows.append(simulate_fmu(fmu, stop_time=0.05, output_interval=1e-3))
    gc.collect()
    last = [r[-1].tolist() for r in rows]
    print(json.dumps({"per_call": (rss() - before) / n, "same_modules": slave() == ids,
                      "n_slaves": len(ids), "same_rows": all(x == last[0] for x in last)}))
""")


def test_simulate_fmu_calls_keep_one_generation_of_the_fmus_packages(disk_fmu):
    proc = subprocess.run([sys.executable, "-c", CHILD, disk_fmu], capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["n_slaves"] == 1 and out["same_modules"], out    # imported once, not per call
    assert out["same_rows"], out                     # and every call gives the same run
    assert out["per_call"] < 1_000_000, out          # was 4.5 MB; 0.35 MB are the binaries
