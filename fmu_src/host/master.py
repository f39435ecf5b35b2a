"""A minimal fmpy master for the built FMUs, shared by the demo, tests and benchmarks.

It steps an FMU from the outside exactly as a user's fmpy script would (FMU2Slave:
setReal, doStep, getReal) and never imports the engine.
"""

from __future__ import annotations

import itertools
import shutil

from ctypes import byref

from fmpy import calloc, extract, free, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2Discard, fmi2OK)
from fmpy.logging import addLoggerProxy


_KEYS = itertools.count(1)
_LOGGERS = {}      # componentEnvironment -> a runner's message collector


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (None if b is None else str(b))


@fmi2CallbackLoggerTYPE
def _route_message(env, name, status, category, message):
    logger = _LOGGERS.get(env)
    if logger is not None:
        logger(status, _text(category), _text(message))


class FmuRunner:
    """One instance of an FMU with name-based access to its variables."""

    def __init__(self, fmu_path, params=None, strings=None, log=None, instance="instance1",
                 initialize=True, unzip_dir=None, md=None):
        """``initialize=False``: only instantiate (the caller goes on with the FMI calls).
        ``unzip_dir``, ``md``: the FMU extracted and its description read already (many
        instances one after another, fmu_src.host.case_run); ``close`` then leaves the folder."""
        self.md = md or read_model_description(fmu_path)
        self._own_dir = unzip_dir is None
        self.dir = extract(fmu_path) if unzip_dir is None else unzip_dir
        self.vars = {v.name: v for v in self.md.modelVariables}
        self.messages = []
        self.categories = []

        def logger(status, category, message):
            self.messages.append((status, message))
            self.categories.append(category)
            if log:
                log(status, message)

        # FMI logger callback that collects the FMU's messages.  fmpy's logger proxy keeps
        # one logger per process, so every runner installs the same one, which routes each
        # message by the componentEnvironment (this runner's number)
        self._key = next(_KEYS)
        _LOGGERS[self._key] = logger
        cb = fmi2CallbackFunctions()
        cb.logger = _route_message
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        cb.componentEnvironment = self._key
        addLoggerProxy(byref(cb))
        self._callbacks = cb
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self.dir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier,
                             instanceName=instance)
        self.fmu.instantiate(loggingOn=True, callbacks=cb)
        self.t = 0.0
        if not initialize:
            return
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.set(**(params or {}))
        for k, v in (strings or {}).items():
            self.fmu.setString([self.vars[k].valueReference], [v])
        self.fmu.exitInitializationMode()

    def vr(self, name):
        return self.vars[name].valueReference

    def set(self, **values):
        for k, v in values.items():
            var = self.vars[k]
            if var.type == "Real":
                self.fmu.setReal([var.valueReference], [float(v)])
            elif var.type in ("Integer", "Enumeration"):
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
            elif var.type in ("Integer", "Enumeration"):
                out[k] = self.fmu.getInteger(vr)[0]
            elif var.type == "Boolean":
                out[k] = self.fmu.getBoolean(vr)[0]
            else:
                out[k] = self.fmu.getString(vr)[0]
        return out

    def outputs(self):
        return self.get(*[v.name for v in self.md.modelVariables if v.causality == "output"])

    def step(self, dt):
        """One communication step; returns fmi2OK, or fmi2Discard when the FMU could not
        complete it (it then stays at its last good state, so time does not advance)."""
        try:
            self.fmu.doStep(currentCommunicationPoint=self.t, communicationStepSize=dt)
        except FMICallException as exc:
            if exc.status != fmi2Discard:
                raise
            return fmi2Discard
        self.t += dt
        return fmi2OK

    def close(self):
        try:
            self.fmu.terminate()
        except FMICallException:
            pass            # already terminated: fmi2Terminate is then an error
        self.fmu.freeInstance()
        _LOGGERS.pop(self._key, None)
        if self._own_dir:
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
