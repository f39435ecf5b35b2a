"""The slave's simulator, built from the FMU's variables at initialization (and at
instantiation, for the outputs' exact start values), and the inputs it takes at each step.
"""

from __future__ import annotations

import math
import os
import weakref

import numpy as np
from pythonfmu.enums import Fmi2Status

from embed import EmbedError
from fmu_src.runtime.instances import compiler
from fmu_src.runtime.variables import FORMULATION


def start_sim(slave, worker=True):
    """The slave's simulator from its parameters, at the start time; ``worker``: start the
    background embedding worker if the embedding asks for it (not at build time, when
    pythonfmu only reads the start values).  Returns None if it started, else the
    exception that stopped it (``slave.sim`` is then None)."""
    for name, pname in slave.sc.input_defaults.items():   # "used when set"
        if name not in slave.variables.inputs_set:
            val = getattr(slave, pname)
            setattr(slave, name, val)
            slave.variables.good_inputs[name] = float(val)
    slave.close_client()
    slave.sim = None
    try:
        embedding = str(slave.embedding)
        if embedding == "background" and not worker:
            embedding = "numeric"
        bc = (compiler(slave.scenario_name, slave.scenario_options, resource_dir(slave.resources))
              if embedding == "background" else None)
        if bc is not None:     # an instance freed without fmi2Terminate leaves too
            weakref.finalize(slave, bc.close)
            bc.real_time = bool(getattr(slave, "real_time", False))
            bc.deadline = float(getattr(slave, "worker_deadline", 20.0))
        params = {v.name: float(getattr(slave, v.name)) for v in slave.sc.parameters}
        formulation, options = formulation_of(slave)
        sim = slave.sc.simulator(params, solver=str(slave.solver), h_max=float(slave.h_max),
                                rtol=float(slave.rtol), inputs=dict(slave.variables.good_inputs),
                                embedding=embedding, compiler=bc, t0=slave.start_time,
                                formulation=formulation, formulation_options=options)
        if not np.isfinite(sim.mon).all():
            bad = [name for name, x in slave.sc.observe(sim).items()
                   if isinstance(x, float) and not math.isfinite(x)]
            raise EmbedError(f"the initial state is not finite (outputs {bad}); check the "
                             "parameters' magnitudes")
        slave.sim = sim
        if sim.start_log:
            slave.log(sim.start_log, Fmi2Status.ok)
        if slave.sc.extension is not None:
            from fmu_src.runtime.formed import extension
            slave.ext = extension(slave.sc, slave.scenario_name, slave.scenario_options,
                                  str(slave.embedding) == "background")(
                slave.sim, bc, lambda msg: slave.log(msg, Fmi2Status.warning))
    except Exception as exc:   # noqa: BLE001 - never let an exception reach pythonfmu
        return exc
    return None


def formulation_of(slave):
    """(formulation, its options) from the FMU parameters (their defaults before they are
    registered: the start values are computed first)."""
    opts = {name: getattr(slave, name, start) for name, start, _, _ in FORMULATION[1:]}
    return str(getattr(slave, "formulation", "embedding")), opts


def resource_dir(resources):
    """The FMU's resources folder (from its URI) (holding embed/ and scenarios/), if it has one."""
    from urllib.parse import unquote, urlparse
    res = resources or ""
    path = unquote(urlparse(res).path) if res.startswith("file:") else res
    return path if path and os.path.isdir(os.path.join(path, "embed")) else None


def read_inputs(slave):
    """Inputs the master changed (each was checked when set) go to the simulator, all or
    none: one the engine refuses is set back to its last good value."""
    if not slave.variables.inputs_changed:        # the per-step cost when nothing was set
        return
    slave.variables.inputs_changed = False
    good = slave.variables.good_inputs
    new = {name: float(getattr(slave, name)) for name in slave.variables.input_names}
    if new == good:
        return
    if slave.sim is not None:
        try:
            slave.sim.set_inputs(new)
        except Exception:
            for name, value in good.items():
                setattr(slave, name, value)
            raise
    good.update(new)
