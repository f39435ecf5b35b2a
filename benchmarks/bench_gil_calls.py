"""Compiled calls while another thread of the process runs Python (issue 30, "Tails").

    python benchmarks/bench_gil_calls.py [--calls 12] [--reps 200]

A stepping thread makes ``--calls`` calls of a large fence's compiled jet (ten sine factors,
``scenarios.disk_fence.family.worker_jet``), about what an event step on a fence makes, while
a second thread runs plain Python (the loader thread placing object code or preparing a
fence's terms does).  Each call is made through the engine's prototype (``native._CFUNC``,
PYFUNCTYPE: the call keeps the GIL) and through ctypes.CFUNCTYPE (the call drops the GIL and
takes it back, as before) at the same address; printed: the median and the largest wall time
of the calls together (us) at the default switch interval and at the loader thread's
(``native.LOADER_SWITCH``), and with no second thread.  Where a call drops the GIL, the busy
thread takes it and the stepping thread waits for it up to the switch interval.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def timed(call, a, o, calls, reps):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(calls):
            call(a, o)
        out.append((time.perf_counter() - t) * 1e6)
        time.sleep(0.0005)              # the master's wait for the next millisecond
    return float(np.median(out)), float(np.max(out))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args(argv)
    from fence_storm import curve

    from embed.codegen import native
    from scenarios.disk_fence.family import worker_jet
    from scenarios.disk_fence.profile import FenceProfile
    jet = worker_jet(FenceProfile.from_text(curve(0.002, 10, 1)))
    x, out = np.array([1.3]), np.zeros(4)
    addr = ctypes.cast(jet._f, ctypes.c_void_p).value
    protos = {"keeps the GIL (PYFUNCTYPE, now)": native._CFUNC(addr),
              "drops the GIL (CFUNCTYPE, before)": ctypes.CFUNCTYPE(
                  None, ctypes.c_void_p, ctypes.c_void_p)(addr)}
    ax, ao = x.ctypes.data, out.ctypes.data
    stop = threading.Event()

    def busy():                         # plain Python, as the loader thread's work
        n = 0
        while not stop.is_set():
            n += 1

    default = sys.getswitchinterval()
    print(f"{a.calls} calls of a ten-factor fence's compiled jet, {a.reps} times; wall us "
          f"(median / max); load average {os.getloadavg()[0]:.2f}")
    for label, call in protos.items():
        alone = timed(call, ax, ao, a.calls, a.reps)
        row = [f"alone {alone[0]:7.1f} / {alone[1]:7.0f}"]
        for interval in (default, native.LOADER_SWITCH):
            sys.setswitchinterval(interval)
            stop.clear()
            th = threading.Thread(target=busy, daemon=True)
            th.start()
            try:
                got = timed(call, ax, ao, a.calls, a.reps)
            finally:
                stop.set()
                th.join()
                sys.setswitchinterval(default)
            row.append(f"busy thread, switch {interval * 1e3:g} ms {got[0]:7.1f} / {got[1]:7.0f}")
        print(f"{label:36s} " + "   ".join(row))


if __name__ == "__main__":
    main()
