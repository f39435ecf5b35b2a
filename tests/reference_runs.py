"""Reference runs of every scenario, the guard of refactorings that must change nothing.

    python tests/reference_runs.py      # writes tests/data/reference_runs.json
    python tests/reference_runs.py NAME # adds or replaces the run of scenario NAME only

Each scenario runs for ``T_END`` s on its symbolic path (the background path runs on the wall
clock) with default parameters and a small input schedule that reaches its events; every
output is recorded each ``DT`` s.  ``tests/test_reference_runs.py`` replays them.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DATA = HERE / "data" / "reference_runs.json"
T_END, DT = 2.0, 0.01
SCHEDULES = {                      # scenario -> {time: inputs set then}
    "pendulum_chain": {0.3: {"pin": 2}},
    "pendulum_belt": {1.0: {"F_tip_x": 2.0}},
    "disk_ramp": {1.0: {"F_ext": -0.5}},
    "metamorphic_palm": {0.5: {"lock_drive1": 1}, 1.2: {"lock_drive1": 0}},
}


def cpu():
    """The CPU model: its name with its family and model numbers (the name alone, "AMD EPYC",
    spans generations whose numpy kernels and libm round differently).  LLVM compiles for the
    host, so bit-for-bit holds on one CPU model."""
    info = {}
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model") and key not in info:
                info[key] = value.strip()
    except OSError:
        pass
    if "model name" not in info:
        return platform.processor()
    return f"{info['model name']} (family {info.get('cpu family')}, model {info.get('model')})"


def run(name):
    """Outputs of scenario ``name`` every DT s: a list of lists of floats."""
    import scenarios
    sc = scenarios.load(name).build()
    sim = sc.simulator(embedding="symbolic")
    schedule = SCHEDULES.get(name, {})
    inputs = {v.name: v.start for v in sc.inputs}
    rows = []
    n = int(round(T_END / DT))
    for k in range(n + 1):
        t = k * DT
        for when, values in schedule.items():
            if abs(when - t) < DT / 2:
                inputs.update(values)
                sim.set_inputs(inputs)
        if k:
            sim.advance(t)
        o = sc.observe(sim)
        rows.append([float(o[v.name]) for v in sc.outputs])
    return {"outputs": [v.name for v in sc.outputs], "rows": rows}


def main(names=None):
    """Write the reference runs of every scenario, or (``names``) add or replace those of the
    scenarios named, each marked with the CPU model that ran it when it is not the file's."""
    import scenarios
    DATA.parent.mkdir(exist_ok=True)
    if not names:
        runs = {name: run(name) for name in scenarios.NAMES}
        DATA.write_text(json.dumps({"cpu": cpu(), "t_end": T_END, "dt": DT, "runs": runs}))
        print(f"wrote {DATA} ({len(runs)} scenarios) on {cpu()}")
        return
    data = json.loads(DATA.read_text())
    for name in names:
        data["runs"][name] = run(name)
        if cpu() != data["cpu"]:
            data["runs"][name]["cpu"] = cpu()
    DATA.write_text(json.dumps(data))
    print(f"wrote {', '.join(names)} into {DATA} on {cpu()}")


if __name__ == "__main__":
    main(sys.argv[1:])
