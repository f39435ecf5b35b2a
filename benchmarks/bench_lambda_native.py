"""symengine's "lambda" backend against its bit-exact object code (embed.codegen.lambda_order).

    python benchmarks/bench_lambda_native.py [--runs 5] [--names disk_ramp slider_crank3 ...]
    python benchmarks/bench_lambda_native.py --fmus DIR/disk_ramp.fmu BARE/disk_ramp.fmu ...

For each scenario, its default run (2 s) fills its library; then, for every lambda-compiled
function in it (small modes' RK4 step and monitors, constraints' terms): its size (inputs,
outputs), the time to translate and compile it with LLVM (paid once, at ``embed-fmu build``),
and the median time of one ``unsafe_real`` call on the run's arguments, lambda closures
against the object code (median of ``--runs`` batches of 2000 calls).  The machine is
shared: compare the ratios of one run, not figures across runs.

``--fmus``: the median (and 90th percentile) of doStep(1 ms) + getReal of one output through
fmpy over 5000 steps after 1000, for each FMU named, in this process one after the other:
an FMU with its shipped object code (the translated functions) beside the same FMU with its
resources/formed removed (symengine's closures compiled at instantiate).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def per_call_us(f, v, out, n=2000):
    t = time.perf_counter()
    for _ in range(n):
        f(v, out)
    return (time.perf_counter() - t) / n * 1e6


def step_us(path, steps=6000, skip=1000):
    """(median, p90) us of doStep(1 ms) + getReal of one output of the FMU ``path``."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(path)
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(path),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="bench")
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    vr = [v.valueReference for v in md.modelVariables if v.causality == "output"][:1]
    t, times = 0.0, []
    for _ in range(steps):
        a = time.perf_counter()
        s.doStep(t, 1e-3)
        s.getReal(vr)
        times.append(time.perf_counter() - a)
        t += 1e-3
    s.terminate()
    s.freeInstance()
    return np.median(times[skip:]) * 1e6, np.percentile(times[skip:], 90) * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--names", nargs="*", default=["disk_ramp", "slider_crank3", "ball_bowl",
                                                     "pendulum_line", "pendulum_belt"])
    ap.add_argument("--fmus", nargs="*", default=None)
    a = ap.parse_args(argv)
    if a.fmus:
        print("| FMU | doStep + getReal median (us) | p90 (us) |\n|---|---|---|")
        for path in a.fmus:
            med, p90 = step_us(path)
            print(f"| {path} | {med:.1f} | {p90:.1f} |")
        return
    import scenarios
    from embed.modes.library import ModeLibrary
    from test_lambda_native import lambda_functions
    print("| scenario | function | in | out | compile (ms) | lambda (us) | native (us) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name in a.names:
        sc = scenarios.load(name).build()
        embedding = "numeric" if sc.embedding == "background" else sc.embedding
        library = ModeLibrary.of(sc.automaton, embedding)
        sc.simulator(embedding=embedding, library=library).advance(2.0)
        rng = np.random.default_rng(0)
        for c in lambda_functions(library):
            t = time.perf_counter()
            native = c.native()
            ms = (time.perf_counter() - t) * 1e3
            v = np.ascontiguousarray(rng.normal(size=c.n_in))
            out = np.empty(c.n_out)
            lam = np.median([per_call_us(c.fn.unsafe_real, v, out) for _ in range(a.runs)])
            nat = np.median([per_call_us(native.unsafe_real, v, out) for _ in range(a.runs)])
            print(f"| {name} | {c.source[2][:48]} | {c.n_in} | {c.n_out} | {ms:.0f} | "
                  f"{lam:.2f} | {nat:.2f} | {nat / lam:.2f} |")


if __name__ == "__main__":
    main()
