"""A minimal fmpy master for the built FMUs, shared by the demo, tests and benchmarks.

It steps an FMU from the outside exactly as a user's fmpy script would (FMU2Slave:
setReal, doStep, getReal) and never imports the engine.
"""

from __future__ import annotations

import shutil

from ctypes import byref

from fmpy import calloc, extract, free, read_model_description
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy.logging import addLoggerProxy


class FmuRunner:
    """One instance of an FMU with name-based access to its variables."""

    def __init__(self, fmu_path, params=None, strings=None, log=None, instance="instance1"):
        self.md = read_model_description(fmu_path)
        self.dir = extract(fmu_path)
        self.vars = {v.name: v for v in self.md.modelVariables}
        self.messages = []

        def logger(env, name, status, category, message):
            text = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
            self.messages.append((status, text))
            if log:
                log(status, text)

        # FMI logger callback that collects the FMU's messages (kept referenced: ctypes)
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(logger)
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(byref(cb))
        self._callbacks = cb
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier,
                             instanceName=instance)
        self.fmu.instantiate(loggingOn=True, callbacks=cb)
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.set(**(params or {}))
        for k, v in (strings or {}).items():
            self.fmu.setString([self.vars[k].valueReference], [v])
        self.fmu.exitInitializationMode()
        self.t = 0.0

    def vr(self, name):
        return self.vars[name].valueReference

    def set(self, **values):
        for k, v in values.items():
            var = self.vars[k]
            if var.type == "Real":
                self.fmu.setReal([var.valueReference], [float(v)])
            elif var.type == "Integer":
                self.fmu.setInteger([var.valueReference], [int(v)])
            elif var.type == "Boolean":
                self.fmu.setBoolean([var.valueReference], [bool(v)])
            else:
                self.fmu.setString([var.valueReference], [str(v)])

    def get(self, *names):
        out = {}
        for k in names:
            var = self.vars[k]
            vr = [var.valueReference]
            if var.type == "Real":
                out[k] = self.fmu.getReal(vr)[0]
            elif var.type == "Integer":
                out[k] = self.fmu.getInteger(vr)[0]
            elif var.type == "Boolean":
                out[k] = self.fmu.getBoolean(vr)[0]
            else:
                out[k] = self.fmu.getString(vr)[0]
        return out

    def outputs(self):
        return self.get(*[v.name for v in self.md.modelVariables if v.causality == "output"])

    def step(self, dt):
        status = self.fmu.doStep(currentCommunicationPoint=self.t, communicationStepSize=dt)
        self.t += dt
        return status

    def close(self):
        self.fmu.terminate()
        self.fmu.freeInstance()
        shutil.rmtree(self.dir, ignore_errors=True)


def run(fmu_path, t_end, dt, params=None, strings=None, schedule=None):
    """Step from 0 to t_end in communication steps dt; returns the output rows (dicts with 'time').

    ``schedule`` maps a step index to a dict of input values set before that step.
    """
    r = FmuRunner(fmu_path, params, strings)
    rows = [{"time": 0.0, **r.outputs()}]
    n = int(round(t_end / dt))
    try:
        for k in range(n):
            if schedule and k in schedule:
                r.set(**schedule[k])
            r.step(dt)
            rows.append({"time": (k + 1) * dt, **r.outputs()})
    finally:
        r.close()
    return rows


__all__ = ["FmuRunner", "run"]
