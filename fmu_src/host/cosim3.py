"""A two-FMU FMI 3.0 co-simulation that honours early return: pi_controller drives disk_ramp's
F_ext toward a speed, coupled as the SSP example (fmu_src/host/ssp.py: disk.u1 -> pi.measurement,
pi.command -> disk.F_ext), both FMUs stepped by fmpy's FMU3Slave.

The master is Gauss-Seidel: over each communication step [t, t + h] the disk steps first with
the command held from t; its speed at the step's end is passed to the controller, which then
steps over the same interval, samples that speed and sets the command from t + h on
(fmu_src/runtime/controller.py).  With ``early_return`` the disk is instantiated with
``earlyReturnAllowed``: when it returns early at a located event (an impact-free mode switch of
gillespie2005 Example 1: slide -> roll, roll -> slide, a zone boundary) at lastSuccessfulTime
t_e < t + h, the controller is stepped only to t_e, so it samples the disk's state at the event
and its new command acts from t_e on; the next step starts at t_e and ends on the grid again.
Without it the event stays inside the disk's step and the controller first sees the state after
the event at the next grid point, up to one communication step late.

    python -m fmu_src.host.cosim3 DIR     # DIR holds disk_ramp_fmi3.fmu and pi_controller_fmi3.fmu
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from fmpy import extract, read_model_description
from fmpy.fmi3 import FMU3Slave


class Fmu3:
    """One FMI 3.0 co-simulation instance: Float64 values by name."""

    def __init__(self, path, name, early_return=False):
        md = read_model_description(str(path))
        self.dir = extract(str(path), unzipdir=tempfile.mkdtemp(prefix=f"cosim3_{name}_"))
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.ints = {v.name for v in md.modelVariables if v.type in ("Int32", "Int64")}
        self.slave = FMU3Slave(guid=md.guid, unzipDirectory=self.dir, instanceName=name,
                               modelIdentifier=md.coSimulation.modelIdentifier)
        self.slave.instantiate(earlyReturnAllowed=early_return)

    def get(self, *names):
        return {n: (self.slave.getInt32([self.vr[n]])[0] if n in self.ints
                    else self.slave.getFloat64([self.vr[n]])[0]) for n in names}

    def set(self, **values):
        for n, v in values.items():
            self.slave.setFloat64([self.vr[n]], [float(v)])

    def close(self):
        try:
            self.slave.terminate()
            self.slave.freeInstance()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


DISK_OUT = ("q1", "u1", "u2", "slip", "F_f", "last_event_time")


def run(fmu_dir, early_return, stop=8.0, h=0.01, disk="disk_ramp_fmi3.fmu",
        pi="pi_controller_fmi3.fmu"):
    """Rows (time, disk outputs, mode, event_count, command) at every communication point,
    the early returns' included, and the list of early returns' times."""
    fmu_dir = Path(fmu_dir)
    d = Fmu3(fmu_dir / disk, "disk", early_return)
    c = Fmu3(fmu_dir / pi, "pi")
    try:
        for f in (d, c):
            f.slave.enterInitializationMode(startTime=0.0)
            f.slave.exitInitializationMode()

        def row(t):
            return {"time": t, **d.get(*DISK_OUT, "mode", "event_count"), **c.get("command")}
        rows, early, t, k = [row(0.0)], [], 0.0, 0
        while t < stop - 1e-12:
            t_grid = (k + 1) * h                 # the next grid point: steps end on the grid
            d.set(F_ext=c.get("command")["command"])
            _, terminate, returned, t_ok = d.slave.doStep(t, t_grid - t)
            if terminate:
                raise RuntimeError(f"disk_ramp asked to terminate at t = {t_ok}")
            c.set(measurement=d.get("u1")["u1"])
            c.slave.doStep(t, t_ok - t)          # to the event time after an early return
            if returned and t_ok < t_grid:
                early.append(t_ok)
            else:
                t_ok, k = t_grid, k + 1
            t = t_ok
            rows.append(row(t))
        return rows, early
    finally:
        d.close()
        c.close()


if __name__ == "__main__":
    for er in (False, True):
        rows, early = run(sys.argv[1], er)
        print("early return" if er else "no early return", early, rows[-1])
